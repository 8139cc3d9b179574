package pipeline

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/schema"
)

// The heartbeat is this instance's document in schema.MigrationsIndex,
// _id schema.HeartbeatDocID(alias, Config.Instance): the migration and
// the phase whose writes it performs now (both empty without a migration)
// and when it said so. It is written after every poll of the migration
// state and after every switch, with a single-document index request and
// refresh=true. The index is created (hidden, one shard) if it is missing
// when the first heartbeat is written. A heartbeat that cannot be written
// is logged and written again at the next poll: the job then sees this
// instance as gone, not as lagging behind.

// beat writes the heartbeat, logging a failure.
func (p *Pipeline) beat(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := p.writeHeartbeat(cctx); err != nil && ctx.Err() == nil {
		p.log.Warn("migration heartbeat not written", "index", schema.MigrationsIndex, "instance", p.cfg.Instance, "error", err)
	}
}

// writeHeartbeat records the applied mode in the heartbeat document.
func (p *Pipeline) writeHeartbeat(ctx context.Context) error {
	if !p.hbIndexReady.Load() {
		if err := p.ensureMigrationsIndex(ctx); err != nil {
			return err
		}
		p.hbIndexReady.Store(true)
	}
	p.mu.Lock()
	cur := p.cur
	p.mu.Unlock()
	now := time.Now().UTC()
	body, err := json.Marshal(schema.Heartbeat{
		Alias: p.cfg.Alias, Instance: p.cfg.Instance, MigrationID: cur.migID, Applied: cur.phase, At: now,
	})
	if err != nil {
		return err
	}
	err = p.admin.Index(ctx, schema.MigrationsIndex, schema.HeartbeatDocID(p.cfg.Alias, p.cfg.Instance), body)
	if err != nil {
		if bulk.IsNotFound(err) {
			p.hbIndexReady.Store(false) // deleted meanwhile: create it again
		}
		return err
	}
	p.lastBeat.Store(now.UnixNano())
	return nil
}

// ensureMigrationsIndex creates schema.MigrationsIndex if it is missing;
// another instance or the job creating it first is fine.
func (p *Pipeline) ensureMigrationsIndex(ctx context.Context) error {
	ok, err := p.admin.IndexExists(ctx, schema.MigrationsIndex)
	if err != nil {
		return err
	}
	if !ok {
		err = p.admin.CreateIndex(ctx, schema.MigrationsIndex, schema.MigrationsIndexBody())
		switch {
		case err == nil:
			p.log.Info("created the migrations index", "index", schema.MigrationsIndex)
		case !bulk.IsAlreadyExists(err):
			return err
		}
	}
	return p.admin.Send(ctx, bulk.Request{Method: http.MethodGet, Path: schema.MigrationsIndexActive}, nil)
}
