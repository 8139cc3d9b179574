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
// the phase whose writes it performs now (both empty without a migration),
// what the instance is doing (consuming, or what it waits for: package health)
// and when it said so. It is written after every poll of the migration
// state and after every switch, with a single-document index request and
// refresh=true. The index is created (hidden, one shard) if it is missing
// when the first heartbeat is written. A heartbeat that cannot be written
// is logged and written again at the next poll: the job then sees this
// instance as gone, not as lagging behind. It also carries the
// instance's progress epoch (epoch.go).

// beat writes the heartbeat, logging a failure.
func (ms *modes) beat(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := ms.writeHeartbeat(cctx); err != nil && ctx.Err() == nil {
		ms.log.Warn("migration heartbeat not written", "index", schema.MigrationsIndex, "instance", ms.cfg.Instance, "error", err)
	}
}

// writeHeartbeat records the applied mode in the heartbeat document.
func (ms *modes) writeHeartbeat(ctx context.Context) error {
	if !ms.hbIndexReady.Load() {
		if err := ms.ensureMigrationsIndex(ctx); err != nil {
			return err
		}
		ms.hbIndexReady.Store(true)
	}
	ms.mu.Lock()
	cur := ms.cur
	ms.mu.Unlock()
	now := time.Now().UTC()
	hb := schema.Heartbeat{
		Alias: ms.cfg.Alias, Instance: ms.cfg.Instance, MigrationID: cur.migID, Applied: cur.phase, At: now,
	}
	if ms.health != nil {
		h := ms.health()
		hb.State, hb.Waiting, hb.Since = h.State, h.Waiting, h.Since
	}
	var ep epochProposal
	if ms.progress != nil {
		// Proposed before the write and kept only once it is acknowledged
		// (epoch.go): every epoch the job reads was written.
		ep = ms.progress.propose()
		hb.Epoch, hb.Started = ep.epoch, ms.progress.started
	}
	body, err := json.Marshal(hb)
	if err != nil {
		return err
	}
	err = ms.admin.Index(ctx, schema.MigrationsIndex, schema.HeartbeatDocID(ms.cfg.Alias, ms.cfg.Instance), body)
	if err != nil {
		if bulk.IsNotFound(err) {
			ms.hbIndexReady.Store(false) // deleted meanwhile: create it again
		}
		return err
	}
	if ms.progress != nil {
		ms.progress.commit(ep)
	}
	ms.lastBeat.Store(now.UnixNano())
	return nil
}

// ensureMigrationsIndex creates schema.MigrationsIndex if it is missing;
// another instance or the job creating it first is fine.
func (ms *modes) ensureMigrationsIndex(ctx context.Context) error {
	ok, err := ms.admin.IndexExists(ctx, schema.MigrationsIndex)
	if err != nil {
		return err
	}
	if !ok {
		err = ms.admin.CreateIndex(ctx, schema.MigrationsIndex, schema.MigrationsIndexBody())
		switch {
		case err == nil:
			ms.log.Info("created the migrations index", "index", schema.MigrationsIndex)
		case !bulk.IsAlreadyExists(err):
			return err
		}
	}
	return ms.admin.Send(ctx, bulk.Request{Method: http.MethodGet, Path: schema.MigrationsIndexActive}, nil)
}
