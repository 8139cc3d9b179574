//go:build realcluster

package cdc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/geoshard/geoshard/internal/realenv"
)

// schemaDDL creates the two captured tables in the schema %[1]s. REPLICA
// IDENTITY FULL makes Postgres log a row's whole before image on update
// and delete, so every event says what the row was: a dish's former
// restaurant, a deleted row's columns.
const schemaDDL = `
CREATE SCHEMA %[1]s;
CREATE TABLE %[1]s.restaurants (
	id integer PRIMARY KEY,
	name text NOT NULL,
	lat double precision NOT NULL,
	lon double precision NOT NULL,
	cuisines text[] NOT NULL DEFAULT '{}'
);
CREATE TABLE %[1]s.dishes (
	id integer PRIMARY KEY,
	restaurant_id integer NOT NULL,
	name text NOT NULL,
	price_cents integer NOT NULL,
	allergens text[] NOT NULL DEFAULT '{}',
	diets text[] NOT NULL DEFAULT '{}'
);
ALTER TABLE %[1]s.restaurants REPLICA IDENTITY FULL;
ALTER TABLE %[1]s.dishes REPLICA IDENTITY FULL;
`

// cdcEnv is the change-data-capture source a test uses: the database,
// the Connect worker and the broker, with a schema of its own.
type cdcEnv struct {
	t       *testing.T
	dsn     string
	db      *pgxpool.Pool
	connect *Connect
	admin   *kadm.Client
	kafka   *kgo.Client
	schema  string
}

// newCDCEnv connects to the CDC source (skipping without it, see
// realenv.CDC) and creates the tables in schema, which it drops first if
// it exists and again at the end of the test.
func newCDCEnv(t *testing.T, schema string) *cdcEnv {
	t.Helper()
	dsn, connectURL := realenv.CDC(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	kc, err := kgo.NewClient(kgo.SeedBrokers(realenv.KafkaBrokers()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	e := &cdcEnv{t: t, dsn: dsn, db: db, connect: &Connect{URL: connectURL}, admin: kadm.NewClient(kc), kafka: kc, schema: schema}
	e.exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
	e.exec(ctx, fmt.Sprintf(schemaDDL, schema))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
	})
	return e
}

// exec runs SQL (one or more statements), failing the test on an error.
func (e *cdcEnv) exec(ctx context.Context, sql string, args ...any) {
	e.t.Helper()
	if _, err := e.db.Exec(ctx, sql, args...); err != nil {
		e.t.Fatalf("%s: %v", strings.TrimSpace(sql), err)
	}
}

// startSource registers a connector named name for the env's two tables
// and waits until it runs. At the end of the test it removes the
// connector, its replication slot and publication, and its topics.
func (e *cdcEnv) startSource(ctx context.Context, name string, src Source) {
	e.t.Helper()
	src.DSN = e.dsn
	src.Tables = []string{e.schema + ".restaurants", e.schema + ".dishes"}
	cfg, err := src.Config()
	if err != nil {
		e.t.Fatal(err)
	}
	// A connector, slot or topics of this name that an interrupted run
	// left would otherwise be taken over.
	e.dropSource(ctx, name, src)
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		e.dropSource(ctx, name, src)
	})
	if err := e.connect.Put(ctx, name, cfg); err != nil {
		e.t.Fatal(err)
	}
	if err := e.connect.WaitRunning(ctx, name); err != nil {
		e.t.Fatal(err)
	}
}

// topics are a source's two topics: restaurants, dishes.
func (e *cdcEnv) topics(src Source) (restaurants, dishes string) {
	return src.TopicPrefix + "." + e.schema + ".restaurants", src.TopicPrefix + "." + e.schema + ".dishes"
}

// dropSource removes the connector, then its slot once no one holds it
// (the connector drops it as it stops; this covers a connector that
// died), its publication and its topics. Failures are logged: it runs
// before a test to clear what an earlier run left, and after it.
func (e *cdcEnv) dropSource(ctx context.Context, name string, src Source) {
	if err := e.connect.Delete(ctx, name); err != nil {
		e.t.Logf("%v", err)
	}
	for {
		var active *bool
		err := e.db.QueryRow(ctx, "SELECT active FROM pg_replication_slots WHERE slot_name = $1", src.Slot).Scan(&active)
		if errors.Is(err, pgx.ErrNoRows) {
			break
		}
		if err == nil && !*active {
			_, err = e.db.Exec(ctx, "SELECT pg_drop_replication_slot($1)", src.Slot)
		}
		if err != nil {
			e.t.Logf("drop slot %s: %v", src.Slot, err)
		}
		select {
		case <-ctx.Done():
			e.t.Logf("slot %s still held: %v", src.Slot, ctx.Err())
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	if _, err := e.db.Exec(ctx, "DROP PUBLICATION IF EXISTS "+pgx.Identifier{src.Publication}.Sanitize()); err != nil {
		e.t.Logf("drop publication %s: %v", src.Publication, err)
	}
	r, d := e.topics(src)
	e.deleteTopics(ctx, r, d)
}

// record is one message of a source topic.
type record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte // nil for a tombstone
}

// readUntil consumes topics from their start until done, given every
// record read so far, says it has what it needs, and returns those
// records. The topics must exist: a connector creates its own when its
// snapshot writes to them, and waitTopics waits for that.
func (e *cdcEnv) readUntil(ctx context.Context, topics []string, done func([]record) bool) []record {
	e.t.Helper()
	c, err := kgo.NewClient(
		kgo.SeedBrokers(realenv.KafkaBrokers()...),
		kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	if err != nil {
		e.t.Fatal(err)
	}
	defer c.Close()
	var got []record
	for !done(got) {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			e.t.Fatalf("read %v: %d records, not all that were awaited: %v", topics, len(got), ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) {
			e.t.Logf("fetch %s/%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value})
		})
	}
	return got
}

// waitTopics waits until the broker knows every topic.
func (e *cdcEnv) waitTopics(ctx context.Context, topics ...string) {
	e.t.Helper()
	for {
		details, err := e.admin.ListTopics(ctx, topics...)
		missing := 0
		for _, tp := range topics {
			if d, ok := details[tp]; !ok || d.Err != nil || len(d.Partitions) == 0 {
				missing++
			}
		}
		if err == nil && missing == 0 {
			return
		}
		select {
		case <-ctx.Done():
			e.t.Fatalf("topics %v: %d not created: %v (last error %v)", topics, missing, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
