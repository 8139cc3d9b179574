package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/geoshard/geoshard/router"
)

// MigrationsIndex holds the state of reshard migrations and the heartbeats
// of ingest instances. Reshard (migrate) writes migrations; ingest
// (pipeline) reads them and writes its heartbeats. Neither imports the
// other: this file is their whole contract.
const MigrationsIndex = ".geoshard-migrations"

// MigrationsIndexActive is the cluster-health request path that waits up
// to 30s for MigrationsIndex's primary to be active. An index that another
// process has just created exists before its primary has started, and
// until then every read and write of it fails (503
// no_shard_available_action_exception); its health is yellow already while
// the primary initializes, so the wait is for an active shard, not a
// colour (on one node a replica never starts).
const MigrationsIndexActive = "/_cluster/health/" + MigrationsIndex + "?wait_for_active_shards=1&timeout=30s"

// Phase is a migration's step. The order below is the order of a
// migration that goes forward; RolledBack and Cancelled are the ways back.
type Phase string

const (
	// PhaseCreated: the target index exists (replicas 0, refresh off,
	// gc_deletes raised); ingest writes only the source.
	PhaseCreated Phase = "created"
	// PhaseDualWrites: ingest writes every change to both indexes, old
	// routing to the source and new routing to the target. Every phase
	// from here to PhaseCutOver, and PhaseRolledBack, keeps dual writes.
	PhaseDualWrites Phase = "dual_writes"
	// PhaseBackfilling: the job copies the source into the target.
	PhaseBackfilling Phase = "backfilling"
	// PhaseBackfilled: every slice is copied.
	PhaseBackfilled Phase = "backfilled"
	// PhaseVerified: the last verification passed; cutover is allowed.
	PhaseVerified Phase = "verified"
	// PhaseCutOver: the alias and its write index point at the target;
	// ingest still writes both (package pipeline's dual-write rules), so
	// the source stays a current rollback target.
	PhaseCutOver Phase = "cut_over"
	// PhaseRolledBack: the alias is back on the source; dual writes go on.
	PhaseRolledBack Phase = "rolled_back"
	// PhaseCompleted: dual writes stopped; the target is the only index.
	PhaseCompleted Phase = "completed"
	// PhaseCancelled: dual writes stopped before cutover; the target is
	// deleted; the source is the only index.
	PhaseCancelled Phase = "cancelled"
)

// Phases lists every phase: the order of a migration that goes forward,
// then the ways back. The job's and ingest's metrics label by it.
var Phases = []Phase{
	PhaseCreated, PhaseDualWrites, PhaseBackfilling, PhaseBackfilled, PhaseVerified, PhaseCutOver, PhaseCompleted,
	PhaseRolledBack, PhaseCancelled,
}

// Valid reports whether p is one of Phases: a migration document in any
// other phase was written by something that does not know this contract.
func (p Phase) Valid() bool {
	for _, q := range Phases {
		if p == q {
			return true
		}
	}
	return false
}

// DualWrites reports whether ingest writes both indexes in this phase.
func (p Phase) DualWrites() bool {
	switch p {
	case PhaseDualWrites, PhaseBackfilling, PhaseBackfilled, PhaseVerified, PhaseCutOver, PhaseRolledBack:
		return true
	}
	return false
}

// TargetIsPrimary reports whether the target is the primary index in this
// phase: the one the alias reads and whose map ingest is pinned to. (Which
// index ingest writes first is another matter: the dual-write rules in
// package pipeline's doc.)
func (p Phase) TargetIsPrimary() bool { return p == PhaseCutOver || p == PhaseCompleted }

// Done reports a finished migration: completed or cancelled.
func (p Phase) Done() bool { return p == PhaseCompleted || p == PhaseCancelled }

// Side is one index of a migration.
type Side struct {
	Index   string `json:"index"`
	MapHash string `json:"map_hash"`
	// Map is the map file, so ingest can route without reading the index.
	Map json.RawMessage `json:"map,omitempty"`
}

// ParseMap reads the map a side records, checked against the side's
// hash: the map both the job and ingest route that index's documents by.
func (s Side) ParseMap() (*router.Map, error) {
	if s.Index == "" {
		return nil, fmt.Errorf("a side names no index")
	}
	if len(s.Map) == 0 {
		return nil, fmt.Errorf("no map recorded for index %s", s.Index)
	}
	m, err := router.Parse(s.Map)
	if err != nil {
		return nil, fmt.Errorf("the map recorded for index %s: %w", s.Index, err)
	}
	if m.Hash() != s.MapHash {
		return nil, fmt.Errorf("the map recorded for index %s hashes to %s, not the recorded %s", s.Index, m.ShortHash(), s.MapHash)
	}
	return m, nil
}

// Migration is the state of one alias's migration: document _id
// "migration:<alias>" in MigrationsIndex, updated with optimistic
// concurrency (if_seq_no, if_primary_term) by the job.
type Migration struct {
	Alias   string    `json:"alias"`
	ID      string    `json:"id"` // e.g. the target index name
	Phase   Phase     `json:"phase"`
	Source  Side      `json:"source"`
	Target  Side      `json:"target"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// Restore holds the settings to put back on the target before cutover
	// and on both indexes at the end.
	Restore RestoreSettings `json:"restore"`
	// Backfill is the per-slice progress of the copy.
	Backfill []SliceState `json:"backfill,omitempty"`
	// Verification is the last verification's report.
	Verification *Verification `json:"verification,omitempty"`
}

// RestoreSettings are index settings the migration changed.
type RestoreSettings struct {
	TargetReplicas        int    `json:"target_replicas"`
	TargetRefreshInterval string `json:"target_refresh_interval"`
	SourceGCDeletes       string `json:"source_gc_deletes"`
	TargetGCDeletes       string `json:"target_gc_deletes"`
}

// SliceState is one backfill slice's checkpoint.
type SliceState struct {
	Slice int `json:"slice"`
	// SourceShard is the source shard the slice reads
	// (preference=_shards:N).
	SourceShard int `json:"source_shard"`
	// After is the doc_id of the last document copied; the scan resumes
	// after it (search_after on doc_id survives an expired point in time).
	After string `json:"after,omitempty"`
	Docs  int64  `json:"docs"`
	Done  bool   `json:"done"`
	// Copied and Stale split Docs by outcome: Copied were written to the
	// target; Stale were refused because the target already held as new a
	// version (a live write came first). Copied + Stale = Docs for a slice
	// checkpointed only by jobs that count them (older ones did not).
	Copied int64 `json:"copied,omitempty"`
	Stale  int64 `json:"stale,omitempty"`
	// Owner is the backfill worker that holds the slice's lease, and
	// LeaseUntil when the lease expires unless renewed; Owner is empty
	// when no worker holds the slice (never claimed, released, or done).
	// Only the holder writes the slice's checkpoint; an unfinished slice
	// whose lease is empty or expired may be claimed by any worker, which
	// resumes it from After.
	Owner      string    `json:"owner,omitempty"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	// Claim counts the claims of the slice: every claim raises it by one,
	// so a holder tells its own claim from a later one, even one made by
	// a worker under the same name (a restarted pod). It stays when the
	// lease is released.
	Claim int64 `json:"claim,omitempty"`
}

// Leased reports whether a worker holds the slice's lease at now.
func (s SliceState) Leased(now time.Time) bool {
	return s.Owner != "" && now.Before(s.LeaseUntil)
}

// ShardReport is one target shard's line of a verification.
type ShardReport struct {
	Shard      string   `json:"shard"`
	Source     int64    `json:"source"`
	Target     int64    `json:"target"`
	OutOfRange int64    `json:"out_of_range"`
	Missing    int64    `json:"missing"`
	Extra      int64    `json:"extra"`
	OK         bool     `json:"ok"`
	MissingIDs []string `json:"missing_ids,omitempty"`
	ExtraIDs   []string `json:"extra_ids,omitempty"`
	// SourceDuplicates counts the ids with a copy in this shard's range of
	// the source that the source holds on two or more of its shards;
	// TargetDuplicates, the ids on this target shard that the target holds
	// on another shard too. An id counts once however many copies it has.
	// Only a comparison of ids finds them.
	SourceDuplicates int64 `json:"source_duplicates,omitempty"`
	TargetDuplicates int64 `json:"target_duplicates,omitempty"`
	// Duplicates are those ids, each with all its copies in its index, at
	// most as many as the missing ids listed (the counts stay exact). An id
	// with copies in two shards' rows is listed in both.
	Duplicates []Duplicate `json:"duplicates,omitempty"`
	// ResolvedInFlight counts the missing, extra and duplicated ids the
	// comparison listed on this shard that a real-time read no longer
	// found, or that were gone once every live ingest instance had
	// finished the changes in flight when they were seen: a change caught
	// between its two writes, not a difference. They are left out of
	// Missing, Extra and the duplicates, and of their lists; Source and
	// Target stay the counts of the comparison that saw them.
	ResolvedInFlight int64 `json:"resolved_in_flight,omitempty"`
}

// Verification is a verification's report.
type Verification struct {
	At     time.Time     `json:"at"`
	OK     bool          `json:"ok"`
	IDs    bool          `json:"ids"` // ids were compared, not only counts
	Shards []ShardReport `json:"shards"`
	// SourceDuplicates and TargetDuplicates count the ids the source and
	// the target hold on two or more shards (each id once; the shards'
	// rows list them). Only a comparison of ids finds them.
	SourceDuplicates int64 `json:"source_duplicates,omitempty"`
	TargetDuplicates int64 `json:"target_duplicates,omitempty"`
	// ResolvedInFlight counts the suspects that resolved themselves: the
	// missing or extra ids of a shard and the ids duplicated in an index
	// that were changes in flight when the comparison read them (a
	// duplicate once, however many shards' rows count it).
	ResolvedInFlight int64 `json:"resolved_in_flight,omitempty"`
}

// Where a duplicate is: Duplicate.Side.
const (
	DuplicateInSource = "source"
	DuplicateInTarget = "target"
)

// Duplicate is a document an index holds on two or more of its shards:
// one _id written under two routings, as a change of a dish's restaurant
// left it before ingest learned to delete the copy under the former
// restaurant's routing. The copy with the highest version (_version, the
// external version ingest writes) is current and the others are
// superseded; copies that share the highest version are tied, and which
// of them is current cannot be told from the index.
type Duplicate struct {
	// Side is DuplicateInSource or DuplicateInTarget; Index names it.
	Side  string `json:"side"`
	Index string `json:"index"`
	ID    string `json:"id"`
	// Copies are the copies, the highest version first.
	Copies []Copy `json:"copies"`
}

// Tie reports copies that share the highest version.
func (d Duplicate) Tie() bool {
	return len(d.Copies) > 1 && d.Copies[0].Status == CopyTied
}

// String says where the copies are, as reports print it:
// "dish:d1 in menu-v1: version 2 on ares (current), version 1 on bravo".
func (d Duplicate) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s in %s:", d.ID, d.Index)
	for k, c := range d.Copies {
		if k > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " version %d on %s", c.Version, c.Where())
		if c.Status != CopySuperseded {
			fmt.Fprintf(&b, " (%s)", c.Status)
		}
	}
	return b.String()
}

// CopyStatus says which copy of a duplicate is current.
type CopyStatus string

const (
	// CopyCurrent: the copy with the highest version.
	CopyCurrent CopyStatus = "current"
	// CopySuperseded: a copy older than the highest version.
	CopySuperseded CopyStatus = "superseded"
	// CopyTied: one of two or more copies at the highest version.
	CopyTied CopyStatus = "tied"
)

// Copy is one copy of a duplicate.
type Copy struct {
	// Shard is the shard it is on, named by its index's map; empty when
	// its routing is none of the map's routing keys.
	Shard   string     `json:"shard"`
	Routing string     `json:"routing,omitempty"`
	Version int64      `json:"version"`
	Status  CopyStatus `json:"status"`
}

// Where names the shard of a copy, or its routing when that is none of
// its map's routing keys.
func (c Copy) Where() string {
	switch {
	case c.Shard != "":
		return c.Shard
	case c.Routing != "":
		return "routing " + c.Routing
	}
	return "no routing"
}

// MigrationDocID is the _id of an alias's migration document.
func MigrationDocID(alias string) string { return "migration:" + alias }

// Heartbeat is what an ingest instance records, every poll, in
// MigrationsIndex under HeartbeatDocID: which migration phase it has
// applied to its writes. The job waits for every live instance (one whose
// heartbeat is recent) to apply a phase before it goes on.
type Heartbeat struct {
	Alias    string `json:"alias"`
	Instance string `json:"instance"`
	// MigrationID and Applied are the migration and phase whose writes the
	// instance performs now (empty when there is none).
	MigrationID string    `json:"migration_id"`
	Applied     Phase     `json:"applied"`
	At          time.Time `json:"at"`
	// State is what the instance is doing when it writes the heartbeat:
	// InstanceConsuming, or what it waits for, with Waiting saying why
	// (the last error) and since when. Empty from an instance that
	// predates it.
	State   InstanceState `json:"state,omitempty"`
	Waiting string        `json:"waiting,omitempty"`
	Since   time.Time     `json:"since,omitzero"`
	// Epoch is the instance's progress epoch: it rises by one, at most
	// once per heartbeat written, when every event the instance had taken
	// in when the epoch last rose is finished (written to every index, or
	// dead-lettered). So once an instance reports Epoch e+2, every event
	// it had taken in when it wrote a heartbeat with e is finished; a
	// change half applied then (a restaurant move between its copies and
	// its deletes) has landed. The verification waits on it (package
	// migrate, suspects.go) before it reports a difference it saw while
	// changes were in flight.
	Epoch int64 `json:"epoch,omitempty"`
	// Started is when the instance's process started: Epoch counts from
	// there, so a heartbeat with another Started is a restarted instance
	// whose Epoch began again. Zero from an instance that predates
	// epochs.
	Started time.Time `json:"started,omitzero"`
}

// InstanceState is an ingest instance's state in its heartbeat and on
// its /readyz.
type InstanceState string

const (
	// InstanceStarting: checks at start (topics, the map, the
	// partitioner) are not done yet.
	InstanceStarting InstanceState = "starting"
	// InstanceConsuming: a member of the group, reading and writing.
	InstanceConsuming InstanceState = "consuming"
	// InstanceNoBroker: the Kafka brokers cannot be reached (or refuse);
	// nothing is read until they can.
	InstanceNoBroker InstanceState = "cannot_reach_broker"
	// InstanceNoOpenSearch: OpenSearch cannot be reached (or refuses);
	// writes are retried and reading is held until it can.
	InstanceNoOpenSearch InstanceState = "cannot_reach_opensearch"
)

// HeartbeatDocID is the _id of an instance's heartbeat.
func HeartbeatDocID(alias, instance string) string {
	return fmt.Sprintf("heartbeat:%s:%s", alias, instance)
}

// MigrationsIndexBody creates MigrationsIndex: one shard, documents kept
// whole (no mapping of the state beyond a few keywords).
func MigrationsIndexBody() []byte {
	return []byte(`{"settings":{"index":{"number_of_shards":1,"number_of_replicas":1,"hidden":true}},` +
		`"mappings":{"dynamic":false,"properties":{"alias":{"type":"keyword"},"instance":{"type":"keyword"},` +
		`"kind":{"type":"keyword"},"phase":{"type":"keyword"},"at":{"type":"date"}}}}`)
}
