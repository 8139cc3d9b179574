package migrate

import (
	"context"
	"fmt"
	"strconv"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// The disk settings EstimateDiskFor reads, and OpenSearch's defaults of
// each (used only if the answer does not name it; include_defaults
// does).
const (
	settingThresholdEnabled = "cluster.routing.allocation.disk.threshold_enabled"
	settingWatermarkHigh    = "cluster.routing.allocation.disk.watermark.high"
	settingWatermarkFlood   = "cluster.routing.allocation.disk.watermark.flood_stage"
	defaultWatermarkHigh    = "90%"
	defaultWatermarkFlood   = "95%"
)

// EstimateDiskFor reads what EstimateDisk weighs from the cluster — the
// source's primary store size, the data nodes' disks, the disk settings
// — and estimates a target under the map with replicas replicas (-1: as
// many as the source has). source is an index, or an alias of one.
func EstimateDiskFor(ctx context.Context, admin *bulk.Admin, source string, replicas int, target *router.Map) (DiskEstimate, error) {
	fail := func(err error) (DiskEstimate, error) {
		return DiskEstimate{}, fmt.Errorf("migrate: disk estimate for a copy of %s: %w", source, err)
	}
	if replicas < 0 {
		var set map[string]string
		err := retryRead(ctx, "read the settings of "+source, func() (err error) {
			set, err = admin.Settings(ctx, source)
			return err
		})
		if err != nil {
			return fail(err)
		}
		if replicas, err = replicasOf(source, set); err != nil {
			return fail(err)
		}
	}
	in := DiskInput{Replicas: replicas, Shards: target.NumShards()}
	for _, s := range target.Shards() {
		in.ShardDocs = append(in.ShardDocs, s.Docs)
	}
	err := retryRead(ctx, "read the store size of "+source, func() (err error) {
		in.SourcePrimaryBytes, err = admin.PrimaryStoreBytes(ctx, source)
		return err
	})
	if err != nil {
		return fail(err)
	}
	var nodes []bulk.NodeFS
	err = retryRead(ctx, "read the nodes' disks", func() (err error) {
		nodes, err = admin.NodesFS(ctx)
		return err
	})
	if err != nil {
		return fail(err)
	}
	for _, n := range nodes {
		if n.IsData() {
			in.Nodes = append(in.Nodes, NodeDisk{Name: n.Name, TotalBytes: n.TotalBytes, AvailableBytes: n.AvailableBytes})
		}
	}
	var set map[string]string
	err = retryRead(ctx, "read the cluster's disk settings", func() (err error) {
		set, err = admin.ClusterSettings(ctx)
		return err
	})
	if err != nil {
		return fail(err)
	}
	if in.Settings, err = diskSettings(set); err != nil {
		return fail(err)
	}
	e, err := EstimateDisk(in)
	if err != nil {
		return fail(err)
	}
	return e, nil
}

// diskSettings reads the disk allocation settings from the cluster's flat
// settings.
func diskSettings(set map[string]string) (DiskSettings, error) {
	var d DiskSettings
	var err error
	enabled := settingOr(set, settingThresholdEnabled, "true")
	if d.Enabled, err = strconv.ParseBool(enabled); err != nil {
		return d, fmt.Errorf("%s %q: want true or false", settingThresholdEnabled, enabled)
	}
	if d.High, err = ParseWatermark(settingOr(set, settingWatermarkHigh, defaultWatermarkHigh)); err != nil {
		return d, fmt.Errorf("%s: %w", settingWatermarkHigh, err)
	}
	if d.FloodStage, err = ParseWatermark(settingOr(set, settingWatermarkFlood, defaultWatermarkFlood)); err != nil {
		return d, fmt.Errorf("%s: %w", settingWatermarkFlood, err)
	}
	return d, nil
}

// replicasOf is an index's number_of_replicas from its flat settings
// (OpenSearch's default when it sets none).
func replicasOf(index string, set map[string]string) (int, error) {
	v, ok := set["index.number_of_replicas"]
	if !ok {
		return defaultReplicas, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s: number_of_replicas %q", index, v)
	}
	return n, nil
}

// checkDisk refuses a new migration whose target does not fit on the
// data nodes (a *DiskError), unless cfg.SkipDiskCheck. It runs before
// the migration is recorded, so a refusal leaves nothing behind.
func (m *Migrator) checkDisk(ctx context.Context, mig *schema.Migration, cfg CreateConfig) error {
	if cfg.SkipDiskCheck {
		m.log.Warn("disk check skipped", "step", StepCreate, "index", mig.Target.Index)
		return nil
	}
	e, err := EstimateDiskFor(ctx, m.admin, mig.Source.Index, mig.Restore.TargetReplicas, cfg.Map)
	if err != nil {
		return fmt.Errorf("migrate: create: %w", err)
	}
	m.log.Info("disk check", "step", StepCreate, "index", mig.Target.Index, "needed_bytes", e.NeededBytes,
		"usable_bytes", e.UsableBytes, "largest_shard_bytes", e.LargestShardBytes, "fits", e.Fits)
	if !e.Fits {
		return &DiskError{Target: mig.Target.Index, Estimate: e}
	}
	return nil
}
