package placement

// Dishes wait for the restaurant topic's placement.
//
// When the dish topic is keyed by dish, a dish is forwarded to the partition of the
// repartition topic that placement gives its restaurant, and a dish
// forwarded to another partition is stranded: the member there never
// sees its restaurant. So nothing is forwarded by a guess. The placer
// samples the restaurant topic at start; if its placement is not known
// (an empty topic, a sample that several partitioners fit, a JSON key
// not yet seen), the repartitioner does not join its consumer group: the
// dish events stay in the dish topic, uncommitted, while the placer reads
// what the restaurant topic gains every Config.Poll, until
// decidePlacement knows the placement. Then the repartitioner joins and
// forwards every dish from its group's committed offsets. The pipeline
// itself consumes the restaurant topic (and the repartition topic)
// meanwhile: restaurants are indexed while their dishes wait.
//
// Why this strands no dish. A placement is known only when it is named
// (Config.Partitioner, checked against the sample), or when
// exactly one partitioner puts every sampled key where it is. A topic
// written by one producer is written by its partitioner P, so every
// sample, of any instance at any moment, fits P: a sample that fits
// exactly one partitioner names P, and a sample that fits several names
// none. The one partitioner ever chosen is therefore P, whoever chooses
// it and whenever. (A topic written by two producers fits no partitioner
// once the sample holds both, and is refused; before that, the decoder's
// check stops at the first event the chosen one misplaces, as it does for
// a producer that changes its partitioner.) The interleavings:
//
//   - Placement learnt while dishes arrive: the repartitioner makes its
//     reader, which joins the group and fetches, only after Learn has
//     returned P, so no dish is in flight under another placement, nor
//     under none. Dishes produced meanwhile wait in the dish topic; the
//     first batch forwarded is placed by P. The decoder checks restaurant
//     events only from then on; those it read before fit P too.
//   - Instances that learn it at different moments: an instance that has
//     not learnt it is not a member of the repartition group, so the
//     dish partitions are shared among those that have, all placing by P.
//     When the late one learns P and joins, the rebalance hands it
//     partitions at their committed offsets; events forwarded but not yet
//     committed by the previous owner are forwarded again, to the same
//     partition, and their versions make the copy a no-op.
//   - An instance restarted: it knows nothing it learnt before, and
//     samples the topic again at start. That sample fits P, as every
//     sample does, so it learns P at once, or (if newer events or
//     retention have left a sample that several fit) waits again, its
//     dishes with it; it never learns another. The repartition group's
//     committed offsets only ever cover dishes forwarded by P.
//
// What waiting costs: a dish is forwarded only once the restaurant topic
// has told the partitioners apart. Two of them put a key alike with
// probability about 1/n, so k keys leave them both fitting with
// probability about (1/n)^k: a handful of restaurant events with six
// partitions. A topic of few restaurants can stay ambiguous; the placer
// says so every Config.Remind, with the partitioners still fitting,
// and naming the partitioner ends the wait at once.

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
)

// Placer knows, or learns, where the restaurant topic holds each
// restaurant (see the top of this file).
type Placer struct {
	cfg    Config
	log    *slog.Logger
	sample *keySampler
	keyID  func(key []byte) (string, bool)
	// known is the placement once known, nil until then. Set by the
	// goroutine that learns (the repartitioner's), read by the decoder.
	known atomic.Pointer[Placement]
	// fitting are the partitioners the sample still fits while not
	// known; only the learning goroutine reads it.
	fitting []Partitioner
}

// NewPlacer samples the restaurant topic and decides its placement if it
// can. An error refuses the topic (detect.go), or cfg.
func NewPlacer(ctx context.Context, cfg Config, log *slog.Logger, keys Keys) (*Placer, error) {
	if err := cfg.validate(false); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	pl := &Placer{
		cfg: cfg, log: log.With("component", "placement"), keyID: keys.KeyID,
		sample: &keySampler{
			client: &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: 10 * time.Second, Transport: cfg.Transport},
			log:    log, topic: cfg.RestaurantTopic, per: SamplePerPartition, maxBytes: max(1<<20, 2*cfg.MaxEventBytes),
		},
	}
	if _, err := pl.sample.refresh(ctx); err != nil {
		return nil, err
	}
	k, err := pl.decide()
	if err != nil {
		return nil, err
	}
	if k == nil {
		pl.log.Warn("the restaurant topic's events do not yet tell which partitioner placed them: dish events wait in the dish topic until they do. "+
			"Name it with --restaurant-partitioner (murmur2, crc32, fnv1a or sarama) to forward them at once", pl.args()...)
	}
	return pl, nil
}

// Current is the placement, nil while it is not known.
func (pl *Placer) Current() *Placement { return pl.known.Load() }

// Fitting are the partitioners the sample fits while the placement is
// not known. Only the goroutine that learns may call it.
func (pl *Placer) Fitting() []Partitioner { return pl.fitting }

// decide reads the placement from the sample, and keeps it once known.
func (pl *Placer) decide() (*Placement, error) {
	k, fitting, err := decidePlacement(pl.cfg.RestaurantTopic, pl.sample.n, pl.sample.samples(), pl.keyID, pl.cfg.KeyIsID, pl.cfg.Partitioner)
	if err != nil || k == nil {
		pl.fitting = fitting
		return nil, err
	}
	pl.known.Store(k)
	pl.log.Info("restaurant topic placement", "topic", k.topic, "partitioner", k.by, "key", k.tmpl.String(), "basis", k.basis.String(),
		"sampled", len(pl.sample.samples()))
	return k, nil
}

// args describe a placement still unknown, for logs.
func (pl *Placer) args() []any {
	return []any{"topic", pl.cfg.RestaurantTopic, "sampled", len(pl.sample.samples()), "fitting", joinPartitioners(pl.fitting)}
}

// Learn returns the placement once it is known, sampling what the
// restaurant topic gains every Config.Poll until then; nil once ctx
// ends first, or with the error that refuses the topic. A sample that
// cannot be read (a broker away, a partition between leaders) is read
// again at the next poll: the dishes wait meanwhile, as they would for
// the broker. One goroutine learns: the repartitioner's, before it
// fetches a dish.
func (pl *Placer) Learn(ctx context.Context) (*Placement, error) {
	if k := pl.Current(); k != nil {
		return k, nil
	}
	poll := time.NewTicker(pl.cfg.Poll)
	defer poll.Stop()
	remind := time.NewTicker(pl.cfg.Remind)
	defer remind.Stop()
	var (
		failing error
		// unread: the sample grew since decide last read it.
		unread bool
	)
	for {
		select {
		case <-ctx.Done():
			return nil, nil
		case <-remind.C:
			args := pl.args()
			if failing != nil {
				args = append(args, "error", failing)
			}
			pl.log.Warn("dish events still wait for the restaurant topic's placement; name it with --restaurant-partitioner to forward them at once", args...)
			continue
		case <-poll.C:
		}
		grew, err := pl.sample.refresh(ctx)
		if ctx.Err() != nil {
			return nil, nil
		}
		unread = unread || grew // partitions read before a failure count
		if err != nil {
			if failing == nil {
				pl.log.Warn("could not sample the restaurant topic; trying again", "topic", pl.cfg.RestaurantTopic, "error", err)
			}
			failing = err
			continue
		}
		failing = nil
		if !unread {
			continue
		}
		unread = false
		if k, err := pl.decide(); k != nil || err != nil {
			return k, err
		}
	}
}
