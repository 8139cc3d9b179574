package cdc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Connect is a client of a Kafka Connect worker's REST API.
type Connect struct {
	// URL is the worker's REST address, e.g. http://127.0.0.1:8083.
	URL string
	// HTTP sends the requests; default http.DefaultClient.
	HTTP *http.Client
}

// ConnectorStatus is a connector's status as GET /connectors/NAME/status
// reports it. States are UNASSIGNED, RUNNING, PAUSED, STOPPED, FAILED and
// RESTARTING; Trace is a failed one's stack trace.
type ConnectorStatus struct {
	Name      string     `json:"name"`
	Connector TaskStatus `json:"connector"`
	Tasks     []struct {
		ID int `json:"id"`
		TaskStatus
	} `json:"tasks"`
}

// TaskStatus is the state of a connector or of one of its tasks.
type TaskStatus struct {
	State string `json:"state"`
	Trace string `json:"trace"`
}

// Running reports whether the connector and every task run, with at least
// one task.
func (s ConnectorStatus) Running() bool {
	if s.Connector.State != "RUNNING" || len(s.Tasks) == 0 {
		return false
	}
	for _, t := range s.Tasks {
		if t.State != "RUNNING" {
			return false
		}
	}
	return true
}

// Failed returns the first failure's trace, or "" when nothing failed.
func (s ConnectorStatus) Failed() string {
	if s.Connector.State == "FAILED" {
		return "connector: " + s.Connector.Trace
	}
	for _, t := range s.Tasks {
		if t.State == "FAILED" {
			return fmt.Sprintf("task %d: %s", t.ID, t.Trace)
		}
	}
	return ""
}

// Put creates the connector NAME with config, or replaces its config if
// it exists (PUT /connectors/NAME/config).
func (c *Connect) Put(ctx context.Context, name string, config map[string]string) error {
	body, err := json.Marshal(config)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, http.MethodPut, "/connectors/"+url.PathEscape(name)+"/config", body, http.StatusOK, http.StatusCreated)
	if err != nil {
		return fmt.Errorf("connect: put connector %s: %w", name, err)
	}
	return nil
}

// Status reads the connector's status.
func (c *Connect) Status(ctx context.Context, name string) (ConnectorStatus, error) {
	var s ConnectorStatus
	body, err := c.do(ctx, http.MethodGet, "/connectors/"+url.PathEscape(name)+"/status", nil, http.StatusOK)
	if err == nil {
		err = json.Unmarshal(body, &s)
	}
	if err != nil {
		return s, fmt.Errorf("connect: status of %s: %w", name, err)
	}
	return s, nil
}

// WaitRunning waits until the connector and its tasks run. It returns at
// once, with the trace, when either failed, and when ctx ends, with the
// last status read.
func (c *Connect) WaitRunning(ctx context.Context, name string) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		s, err := c.Status(ctx, name)
		switch {
		case err != nil:
			last = err.Error()
		case s.Running():
			return nil
		case s.Failed() != "":
			return fmt.Errorf("connect: connector %s failed: %s", name, s.Failed())
		default:
			last = fmt.Sprintf("connector %s, %d task(s)", s.Connector.State, len(s.Tasks))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("connect: connector %s not running (%s): %w", name, last, ctx.Err())
		case <-tick.C:
		}
	}
}

// Delete removes the connector; one that does not exist is not an error.
// The worker stops its tasks after it answers.
func (c *Connect) Delete(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodDelete, "/connectors/"+url.PathEscape(name), nil, http.StatusNoContent, http.StatusOK, http.StatusNotFound)
	if err != nil {
		return fmt.Errorf("connect: delete connector %s: %w", name, err)
	}
	return nil
}

// do sends one request and returns the body of an answer with one of the
// statuses in ok; any other answer is an error quoting the body.
func (c *Connect) do(ctx context.Context, method, path string, body []byte, ok ...int) ([]byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.URL, "/")+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	for _, s := range ok {
		if resp.StatusCode == s {
			return out, nil
		}
	}
	return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(out))
}

// Source is the configuration of one Debezium Postgres connector: logical
// decoding through pgoutput, its own replication slot and publication
// (created for its tables alone), an initial snapshot, and Connect's JSON
// converter for keys and values.
type Source struct {
	// DSN is the database's libpq URL
	// (postgres://user[:password]@host:port/database). Required.
	DSN string
	// Tables are the captured tables as schema.table (table.include.list).
	// At least one.
	Tables []string
	// Slot is the replication slot's name: lowercase letters, digits and
	// underscores. Required. The connector drops it when it stops.
	Slot string
	// Publication is the pgoutput publication's name, created by the
	// connector for Tables. Required.
	Publication string
	// TopicPrefix names the topics: <prefix>.<schema>.<table>. Required.
	TopicPrefix string
	// Schemas sets the JSON converter's schemas.enable for keys and
	// values: each message then wraps its payload with the schema of its
	// fields ({"schema":…,"payload":…}). Default false.
	Schemas bool
	// Partitions is the partition count of the topics the connector
	// creates; default 1. The broker creates no topic on its own.
	Partitions int
}

var slotName = regexp.MustCompile(`^[a-z0-9_]{1,63}$`)

// Config returns the connector's settings for Connect.Put; it reports
// every bad field at once.
func (s Source) Config() (map[string]string, error) {
	var bad []string
	u, err := url.Parse(s.DSN)
	if err != nil || u.Host == "" || u.Port() == "" || u.User == nil || strings.Trim(u.Path, "/") == "" {
		bad = append(bad, fmt.Sprintf("DSN %q: want postgres://user@host:port/database", s.DSN))
	}
	if len(s.Tables) == 0 {
		bad = append(bad, "Tables: none; name at least one schema.table")
	}
	if !slotName.MatchString(s.Slot) {
		bad = append(bad, fmt.Sprintf("Slot %q: want 1 to 63 lowercase letters, digits and underscores", s.Slot))
	}
	if s.Publication == "" {
		bad = append(bad, "Publication: missing")
	}
	if s.TopicPrefix == "" {
		bad = append(bad, "TopicPrefix: missing")
	}
	if s.Partitions < 0 {
		bad = append(bad, fmt.Sprintf("Partitions %d: must not be negative", s.Partitions))
	}
	if len(bad) > 0 {
		return nil, errors.New("cdc: source: " + strings.Join(bad, "; "))
	}
	partitions := s.Partitions
	if partitions == 0 {
		partitions = 1
	}
	password, _ := u.User.Password()
	schemas := strconv.FormatBool(s.Schemas)
	return map[string]string{
		"connector.class":    "io.debezium.connector.postgresql.PostgresConnector",
		"tasks.max":          "1",
		"plugin.name":        "pgoutput",
		"database.hostname":  u.Hostname(),
		"database.port":      u.Port(),
		"database.user":      u.User.Username(),
		"database.password":  password,
		"database.dbname":    strings.Trim(u.Path, "/"),
		"topic.prefix":       s.TopicPrefix,
		"table.include.list": strings.Join(s.Tables, ","),
		"slot.name":          s.Slot,
		// The slot holds the server's WAL while it exists: it goes with
		// the connector.
		"slot.drop.on.stop":                         "true",
		"publication.name":                          s.Publication,
		"publication.autocreate.mode":               "filtered",
		"snapshot.mode":                             "initial",
		"tombstones.on.delete":                      "true",
		"key.converter":                             "org.apache.kafka.connect.json.JsonConverter",
		"key.converter.schemas.enable":              schemas,
		"value.converter":                           "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable":            schemas,
		"topic.creation.default.replication.factor": "1",
		"topic.creation.default.partitions":         strconv.Itoa(partitions),
		// The stream is polled every 100ms instead of 500ms, so a change
		// reaches Kafka soon after its commit.
		"poll.interval.ms": "100",
	}, nil
}
