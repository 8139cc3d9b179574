package pipeline

// Learning the restaurant topic's placement at start.
//
// Before the repartitioner forwards anything, placeRestaurants reads the
// last events of every partition of the restaurant topic (up to
// placementSample of each) and keeps the keyed ones as evidence. A
// partitioner fits if it puts every sampled key in the partition it was
// read from; the key template is learnt from the first key that names its
// restaurant id (through keyID, the format's reading of a key) and must
// spell every other one exactly.
//
//   - Auto, one fits: it is the placement. Several fit (a small sample):
//     the first of Partitioners among them, with a warning, since the
//     decoder's check stops ingest at the first event that contradicts it
//     (with one partition all fit, and all are right).
//   - Auto, none fits: start fails. If every sampled key fits some
//     partitioner, the topic was produced by two (two clients); else by
//     none of these. The error names what fits which keys and the fix.
//   - Named: it must fit every sampled key, or start fails.
//   - No keyed event (an empty topic): nothing to learn. Auto assumes
//     murmur2 and keys that are the id, with a warning that says how to
//     name it; a named one is taken as named. Either way the decoder
//     checks each restaurant event as it arrives, and the first that
//     contradicts the placement stops ingest (MisplacedRestaurantError),
//     uncommitted: a restart then learns the placement from the events
//     now in the topic. Dish events forwarded before that stop were placed
//     by the assumption; those whose restaurant another instance reads
//     wait there and are dead-lettered as unknown_restaurant once they
//     have waited Config.PendingMaxAge, with their dish-topic origin, for
//     replay.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/segmentio/kafka-go"
)

// placementSample is how many of the last events of each restaurant
// topic partition are read at start.
const placementSample = 200

// keySample is a sampled restaurant-topic event: where it is and its key.
type keySample struct {
	partition int
	offset    int64
	key       []byte
}

// placeRestaurants learns, under DishKeyDish, where the restaurant
// topic's producer puts a restaurant's events (see the top of this file);
// nil under any other keying. keyID reads a restaurant id from a key.
func placeRestaurants(ctx context.Context, cfg Config, log *slog.Logger, t *kafka.Transport, keyID func(key []byte) (string, bool)) (*keyPlacement, error) {
	if cfg.DishKey != DishKeyDish {
		return nil, nil
	}
	client := &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: 10 * time.Second, Transport: t}
	n, samples, err := sampleKeys(ctx, client, log, cfg.RestaurantTopic, placementSample, max(1<<20, 2*cfg.MaxEventBytes))
	if err != nil {
		return nil, err
	}
	k, err := decidePlacement(cfg.RestaurantTopic, n, samples, keyID, cfg.RestaurantPartitioner)
	if err != nil {
		return nil, err
	}
	args := []any{"topic", cfg.RestaurantTopic, "partitioner", k.by, "key", k.tmpl.String(), "basis", k.basis.String(), "sampled", len(samples)}
	switch k.basis {
	case basisAssumed:
		log.Warn("restaurant topic has no keyed events to learn its partitioner from: assuming murmur2 (Kafka's default) and keys that are the restaurant id; "+
			"if its producer uses another, name it with --restaurant-partitioner (murmur2, crc32, fnv1a or sarama). The first restaurant event that contradicts this stops ingest", args...)
	case basisAmbiguous:
		log.Warn("restaurant topic's sampled events fit more than one partitioner; using the first. Name it with --restaurant-partitioner if that is wrong: "+
			"the first restaurant event that contradicts it stops ingest", append(args, "also", joinPartitioners(k.also))...)
	default:
		log.Info("restaurant topic placement", args...)
	}
	return k, nil
}

// decidePlacement chooses the placement of a topic of n partitions from
// its sampled keys (see the top of this file).
func decidePlacement(topic string, n int, samples []keySample, keyID func([]byte) (string, bool), named Partitioner) (*keyPlacement, error) {
	k := &keyPlacement{topic: topic, parts: partitionNumbers(n), keyID: keyID, by: PartitionerMurmur2}
	if named == "" {
		named = PartitionerAuto
	}
	var keyed []keySample
	for _, s := range samples {
		if len(s.key) > 0 {
			keyed = append(keyed, s)
		}
	}
	if named != PartitionerAuto {
		k.by, k.basis = named, basisNamed
	}
	if len(keyed) == 0 {
		return k, nil
	}
	tmpl, err := learnKeys(topic, keyed, keyID)
	if err != nil {
		return nil, err
	}
	k.tmpl = tmpl

	// fits[p] counts the samples p places where they are; first[p] is the
	// first it does not.
	fits := map[Partitioner]int{}
	first := map[Partitioner]*keySample{}
	var fitting []Partitioner
	for _, p := range Partitioners {
		for i := range keyed {
			if p.partition(keyed[i].key, k.parts) == keyed[i].partition {
				fits[p]++
			} else if first[p] == nil {
				first[p] = &keyed[i]
			}
		}
		if fits[p] == len(keyed) {
			fitting = append(fitting, p)
		}
	}
	if named != PartitionerAuto {
		if fits[named] == len(keyed) {
			return k, nil
		}
		return nil, &PlacementError{Topic: topic, Partitions: n, Sampled: len(keyed), Named: named, Fits: fits, Misfit: first[named], Fitting: fitting}
	}
	if len(fitting) == 0 {
		return nil, &PlacementError{Topic: topic, Partitions: n, Sampled: len(keyed), Fits: fits, Misfit: unplaced(keyed, k.parts), Fitting: fitting}
	}
	k.by, k.basis = fitting[0], basisDetected
	for _, p := range fitting[1:] {
		if p.samePlace() != k.by.samePlace() && n > 1 {
			k.also = append(k.also, p)
		}
	}
	if len(k.also) > 0 {
		k.basis = basisAmbiguous
	}
	return k, nil
}

// unplaced is the first sample no partitioner puts where it is, or nil
// if each fits one (then the topic was produced by more than one).
func unplaced(keyed []keySample, parts []int) *keySample {
	for i := range keyed {
		fits := false
		for _, p := range Partitioners {
			fits = fits || p.partition(keyed[i].key, parts) == keyed[i].partition
		}
		if !fits {
			return &keyed[i]
		}
	}
	return nil
}

// learnKeys learns the key template from the first sampled key that
// names a restaurant id, and checks that it spells every other one.
// Keys the format cannot read are left out (the decoder dead-letters
// their events); if none can be read, the template is the id itself.
func learnKeys(topic string, keyed []keySample, keyID func([]byte) (string, bool)) (keyTemplate, error) {
	var (
		tmpl    keyTemplate
		learnt  *keySample
		learntI string
	)
	for i := range keyed {
		s := &keyed[i]
		id, ok := keyID(s.key)
		if !ok {
			continue
		}
		if learnt == nil {
			t, ok := learnTemplate(s.key, id)
			if !ok {
				return keyTemplate{}, &KeyTemplateError{Topic: topic, Key: clip(s.key), ID: id, Partition: s.partition, Offset: s.offset}
			}
			tmpl, learnt, learntI = t, s, id
			continue
		}
		if got := tmpl.key(id); string(got) != string(s.key) {
			return keyTemplate{}, &KeyTemplateError{Topic: topic, Key: clip(s.key), ID: id, Partition: s.partition, Offset: s.offset,
				Template: tmpl.String(), Want: clip(got), Learnt: fmt.Sprintf("%s/%d@%d (key %s, id %q)", topic, learnt.partition, learnt.offset, clip(learnt.key), learntI)}
		}
	}
	return tmpl, nil
}

// PlacementError is the refusal to start when the restaurant topic's
// sampled keys are not where the named partitioner puts them, or where
// any one partitioner puts them all.
type PlacementError struct {
	Topic      string
	Partitions int
	// Sampled counts the keyed events sampled.
	Sampled int
	// Named is the partitioner named (Config.RestaurantPartitioner); ""
	// under auto.
	Named Partitioner
	// Fits counts, per partitioner, the sampled keys it places where
	// they are.
	Fits map[Partitioner]int
	// Misfit is a sampled key the named partitioner misplaces, or under
	// auto one no partitioner places (nil: each key fits one, but no
	// partitioner fits all: two producers).
	Misfit *keySample
	// Fitting are the partitioners that fit every sampled key (with a
	// named one that does not).
	Fitting []Partitioner
}

func (e *PlacementError) Error() string {
	var fits []string
	for _, p := range Partitioners {
		fits = append(fits, fmt.Sprintf("%s %d", p, e.Fits[p]))
	}
	counts := fmt.Sprintf("of %d keyed events sampled from the end of its %d partitions, each partitioner places (%s) where they are",
		e.Sampled, e.Partitions, strings.Join(fits, ", "))
	at := func(s *keySample) string {
		return fmt.Sprintf("%s/%d@%d (key %s)", e.Topic, s.partition, s.offset, clip(s.key))
	}
	one := "produce the restaurant topic keyed by restaurant id with one partitioner: murmur2 (" + PartitionerMurmur2.Clients() + "), crc32 (" +
		PartitionerCRC32.Clients() + ") or fnv1a (" + PartitionerFNV1a.Clients() + ")"
	switch {
	case e.Named != "":
		fix := fmt.Sprintf("produce it with %s (%s)", e.Named, e.Named.Clients())
		if len(e.Fitting) > 0 {
			fix = fmt.Sprintf("its events fit %s: set --restaurant-partitioner to that (or auto), or %s", joinPartitioners(e.Fitting), fix)
		}
		return fmt.Sprintf("pipeline: restaurant topic %q: the restaurant partitioner is set to %s, but %s is not where %s puts it (%s); %s",
			e.Topic, e.Named, at(e.Misfit), e.Named, counts, fix)
	case e.Misfit == nil:
		return fmt.Sprintf("pipeline: restaurant topic %q was produced with more than one partitioner, as when two clients write it (%s), "+
			"so no one placement holds for its dishes; %s, and re-produce the events the others placed", e.Topic, counts, one)
	}
	return fmt.Sprintf("pipeline: restaurant topic %q: %s is where no known partitioner puts its key (%s); %s",
		e.Topic, at(e.Misfit), counts, one)
}

// KeyTemplateError is the refusal to start when the restaurant topic's
// keys do not spell their restaurant ids in one way: dishes are placed by
// the spelling of their restaurant id as a key.
type KeyTemplateError struct {
	Topic          string
	Partition      int
	Offset         int64
	Key, ID        string
	Template, Want string // the template learnt and the key it spells (empty: none could be learnt from Key)
	Learnt         string // where the template was learnt
}

func (e *KeyTemplateError) Error() string {
	at := fmt.Sprintf("%s/%d@%d", e.Topic, e.Partition, e.Offset)
	if e.Template == "" {
		return fmt.Sprintf("pipeline: restaurant topic %q: the key %s of %s does not contain its restaurant id %q, so its dishes cannot be placed by it; "+
			"key the restaurant topic by restaurant id", e.Topic, e.Key, at, e.ID)
	}
	return fmt.Sprintf("pipeline: restaurant topic %q: the key %s of %s spells its restaurant id %q otherwise than %s did (%s, which spells it %s), "+
		"so dishes cannot be placed by one spelling; produce every restaurant event with one key format", e.Topic, e.Key, at, e.ID, e.Learnt, e.Template, e.Want)
}

// sampleKeys reads the last per events (or fewer) of every partition of
// topic, with their keys; n is the topic's partition count. maxBytes
// bounds one fetch.
func sampleKeys(ctx context.Context, client *kafka.Client, log *slog.Logger, topic string, per, maxBytes int) (n int, samples []keySample, err error) {
	counts, err := partitionCounts(ctx, client, topic)
	if err != nil {
		return 0, nil, fmt.Errorf("pipeline: read the partitions of restaurant topic %q: %w", topic, err)
	}
	n = counts[topic]
	if n == 0 {
		return 0, nil, fmt.Errorf("pipeline: restaurant topic %q not found", topic)
	}
	reqs := make([]kafka.OffsetRequest, 0, 2*n)
	for p := range n {
		reqs = append(reqs, kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p))
	}
	var offsets *kafka.ListOffsetsResponse
	err = retry(ctx, log, "list the offsets of the restaurant topic", func() error {
		offsets, err = client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	parts := offsets.Topics[topic]
	sort.Slice(parts, func(i, j int) bool { return parts[i].Partition < parts[j].Partition })
	for _, po := range parts {
		if po.Error != nil {
			return 0, nil, fmt.Errorf("pipeline: list the offsets of restaurant topic %s/%d: %w", topic, po.Partition, po.Error)
		}
		got, err := sampleKeysOf(ctx, client, log, topic, po.Partition, max(po.FirstOffset, po.LastOffset-int64(per)), po.LastOffset, maxBytes)
		if err != nil {
			return 0, nil, err
		}
		samples = append(samples, got...)
	}
	return n, samples, nil
}

// sampleKeysOf reads the keys of partition p of topic from offset from
// up to end.
func sampleKeysOf(ctx context.Context, client *kafka.Client, log *slog.Logger, topic string, p int, from, end int64, maxBytes int) ([]keySample, error) {
	var out []keySample
	offset := from
	for offset < end {
		var res *kafka.FetchResponse
		err := retry(ctx, log, "sample the restaurant topic", func() error {
			var err error
			res, err = client.Fetch(ctx, &kafka.FetchRequest{
				Topic: topic, Partition: p, Offset: offset, MinBytes: 0, MaxBytes: int64(maxBytes), MaxWait: 100 * time.Millisecond,
			})
			if err == nil {
				err = res.Error
			}
			var ke kafka.Error
			if errors.As(err, &ke) && !ke.Temporary() {
				return backoff.Permanent(err) // OffsetOutOfRange below, or the broker's refusal
			}
			return err
		})
		if errors.Is(err, kafka.OffsetOutOfRange) && res != nil && offset < res.LogStartOffset {
			offset = res.LogStartOffset // deleted since it was listed
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("pipeline: sample restaurant topic %s/%d: %w", topic, p, err)
		}
		got := 0
		for {
			r, err := res.Records.ReadRecord()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("pipeline: sample restaurant topic %s/%d at %d: %w", topic, p, offset, err)
			}
			if r.Offset < offset {
				continue // a batch may start before the offset asked for
			}
			if r.Offset >= end {
				break
			}
			got++
			offset = r.Offset + 1
			key, err := kafka.ReadAll(r.Key)
			if err != nil {
				return nil, err
			}
			out = append(out, keySample{partition: p, offset: r.Offset, key: key})
		}
		if got == 0 {
			break // the rest is transaction markers: no events
		}
	}
	return out, nil
}
