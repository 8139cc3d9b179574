package placement

// Reading the restaurant topic's placement from its events.
//
// The placer (learn.go) samples the last events of every
// partition of the restaurant topic (up to SamplePerPartition of each) and
// keeps the keyed ones as evidence. A partitioner fits if it puts every
// sampled key in the partition it was read from; the key template is
// learnt from the first key that names its restaurant id (through keyID,
// the format's reading of a key) and must spell every other one exactly.
// decidePlacement reads the evidence:
//
//   - Auto, exactly one fits (counting fnv1a and sarama, which place
//     every key alike, as one): it is the placement. With one partition
//     every partitioner is right, so any is.
//   - Auto, several fit (a small sample), or no keyed event yet (an empty
//     topic): not known. Nothing is assumed: the dishes wait until more
//     restaurant events tell the partitioners apart.
//   - Auto, none fits: refused. If every sampled key fits some
//     partitioner, the topic was produced by two (two clients); else by
//     none of these. The error names what fits which keys and the fix.
//   - Named: known at once, if the sample agrees; a sampled key it does
//     not fit refuses the topic.
//
// The template is known at once when keys are the restaurant id itself
// (the native format); otherwise (Debezium's JSON keys) once a sampled
// key names its restaurant id.

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/kafkarange"
)

// SamplePerPartition is how many of the last events of each restaurant
// topic partition are read at start.
const SamplePerPartition = 200

// keySample is a sampled restaurant-topic event: where it is and its key.
type keySample struct {
	partition int
	offset    int64
	key       []byte
}

// decidePlacement reads the placement of a topic of n partitions from
// its sampled keys (see the top of this file): nil while it is not known,
// with the partitioners that fit every keyed sample so far (all of them
// when there is none); an error if the samples refuse the topic. keyIsID
// says that a restaurant's key is its id itself, so the template needs
// no sample.
func decidePlacement(topic string, n int, samples []keySample, keyID func([]byte) (string, bool), keyIsID bool, named Partitioner) (*Placement, []Partitioner, error) {
	k := &Placement{topic: topic, parts: partitionNumbers(n), keyID: keyID}
	if named == "" {
		named = PartitionerAuto
	}
	var keyed []keySample
	for _, s := range samples {
		if len(s.key) > 0 {
			keyed = append(keyed, s)
		}
	}
	spelled := keyIsID
	if len(keyed) > 0 {
		tmpl, learnt, err := learnKeys(topic, keyed, keyID)
		if err != nil {
			return nil, nil, err
		}
		k.tmpl, spelled = tmpl, spelled || learnt
	}

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
	switch {
	case named != PartitionerAuto:
		if fits[named] != len(keyed) {
			return nil, nil, &PlacementError{Topic: topic, Partitions: n, Sampled: len(keyed), Named: named, Fits: fits, Misfit: first[named], Fitting: fitting}
		}
		k.by, k.basis = named, BasisNamed
	case len(fitting) == 0:
		return nil, nil, &PlacementError{Topic: topic, Partitions: n, Sampled: len(keyed), Fits: fits, Misfit: unplaced(keyed, k.parts), Fitting: fitting}
	case n == 1:
		k.by, k.basis = fitting[0], BasisDetected // partition 0, whichever
	default:
		for _, p := range fitting[1:] {
			if p.SamePlace() != fitting[0].SamePlace() || len(keyed) == 0 {
				return nil, fitting, nil // several still fit
			}
		}
		k.by, k.basis = fitting[0], BasisDetected
	}
	if !spelled {
		return nil, fitting, nil
	}
	return k, nil, nil
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
// their events); learnt is false if none can be read.
func learnKeys(topic string, keyed []keySample, keyID func([]byte) (string, bool)) (tmpl keyTemplate, learnt bool, err error) {
	var (
		from   *keySample
		fromID string
	)
	for i := range keyed {
		s := &keyed[i]
		id, ok := keyID(s.key)
		if !ok {
			continue
		}
		if from == nil {
			t, ok := learnTemplate(s.key, id)
			if !ok {
				return keyTemplate{}, false, &KeyTemplateError{Topic: topic, Key: clip(s.key), ID: id, Partition: s.partition, Offset: s.offset}
			}
			tmpl, from, fromID = t, s, id
			continue
		}
		if got := tmpl.key(id); string(got) != string(s.key) {
			return keyTemplate{}, false, &KeyTemplateError{Topic: topic, Key: clip(s.key), ID: id, Partition: s.partition, Offset: s.offset,
				Template: tmpl.String(), Want: clip(got), Learnt: fmt.Sprintf("%s/%d@%d (key %s, id %q)", topic, from.partition, from.offset, clip(from.key), fromID)}
		}
	}
	return tmpl, from != nil, nil
}

// PlacementError is the refusal of a restaurant topic whose sampled keys
// are not where the named partitioner puts them, or where any one
// partitioner puts them all: at start, or when they are sampled while the
// placement is learnt, which stops the pipeline.
type PlacementError struct {
	Topic      string
	Partitions int
	// Sampled counts the keyed events sampled.
	Sampled int
	// Named is the partitioner named (Config.Partitioner); ""
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

// KeyTemplateError is the refusal (as PlacementError's) of a restaurant
// topic whose keys do not spell their restaurant ids in one way: dishes are placed by
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
	s := &keySampler{client: client, log: log, topic: topic, per: per, maxBytes: maxBytes}
	if _, err := s.refresh(ctx); err != nil {
		return 0, nil, err
	}
	return s.n, s.samples(), nil
}

// keySampler keeps the last per events of every partition of a topic,
// read again only where the partition has grown: a placer that waits for
// the restaurant topic's placement refreshes it often.
type keySampler struct {
	client        *kafka.Client
	log           *slog.Logger
	topic         string
	per, maxBytes int
	// n is the topic's partition count, read at the first refresh; end[p]
	// is the offset partition p was read up to, keys[p] its last per
	// keyed or unkeyed events.
	n    int
	end  []int64
	keys [][]keySample
}

// refresh reads what the topic's partitions gained since the last
// refresh, and reports whether anything did (with an error, in the
// partitions read before it).
func (s *keySampler) refresh(ctx context.Context) (grew bool, err error) {
	if s.n == 0 {
		counts, err := kafkarange.PartitionCounts(ctx, s.client, s.topic)
		if err != nil {
			return false, fmt.Errorf("pipeline: read the partitions of restaurant topic %q: %w", s.topic, err)
		}
		if s.n = counts[s.topic]; s.n == 0 {
			return false, fmt.Errorf("pipeline: restaurant topic %q not found", s.topic)
		}
		s.end, s.keys = make([]int64, s.n), make([][]keySample, s.n)
	}
	reqs := make([]kafka.OffsetRequest, 0, 2*s.n)
	for p := range s.n {
		reqs = append(reqs, kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p))
	}
	var offsets *kafka.ListOffsetsResponse
	err = retry(ctx, s.log, "list the offsets of the restaurant topic", func() error {
		offsets, err = s.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{s.topic: reqs}})
		return err
	})
	if err != nil {
		return false, err
	}
	parts := offsets.Topics[s.topic]
	sort.Slice(parts, func(i, j int) bool { return parts[i].Partition < parts[j].Partition })
	for _, po := range parts {
		if po.Error != nil {
			return false, fmt.Errorf("pipeline: list the offsets of restaurant topic %s/%d: %w", s.topic, po.Partition, po.Error)
		}
		p := po.Partition
		if p < 0 || p >= s.n || po.LastOffset == s.end[p] {
			continue
		}
		from := max(po.FirstOffset, po.LastOffset-int64(s.per))
		if po.LastOffset > s.end[p] {
			from = max(from, s.end[p])
		} else {
			s.keys[p] = nil // the partition was emptied and written again
		}
		got, err := sampleKeysOf(ctx, s.client, s.log, s.topic, p, from, po.LastOffset, s.maxBytes)
		if err != nil {
			return false, err
		}
		kept := append(s.keys[p], got...)
		for len(kept) > 0 && (len(kept) > s.per || kept[0].offset < po.FirstOffset) {
			kept = kept[1:]
		}
		s.keys[p], s.end[p] = kept, po.LastOffset
		grew = true
	}
	return grew, nil
}

// samples is every partition's sample, in partition order.
func (s *keySampler) samples() []keySample {
	var out []keySample
	for _, k := range s.keys {
		out = append(out, k...)
	}
	return out
}

// sampleKeysOf reads the keys of partition p of topic from offset from
// up to end.
func sampleKeysOf(ctx context.Context, client *kafka.Client, log *slog.Logger, topic string, p int, from, end int64, maxBytes int) ([]keySample, error) {
	var out []keySample
	rd := kafkarange.Reader{Client: client, Retry: func(ctx context.Context, fetch func() error) error {
		return retry(ctx, log, "sample the restaurant topic", fetch)
	}}
	// Short (the rest is transaction markers: no events) ends the sample
	// as the end does.
	res, err := rd.Read(ctx, kafkarange.Range{Topic: topic, Partition: p, From: from, End: end, MaxBytes: int64(maxBytes)}, func(r *kafka.Record) error {
		key, err := kafka.ReadAll(r.Key)
		if err != nil {
			return err
		}
		out = append(out, keySample{partition: p, offset: r.Offset, key: key})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pipeline: sample restaurant topic %s/%d at %d: %w", topic, p, res.Next, err)
	}
	return out, nil
}

// retry calls f until it succeeds, fails for good, or ctx ends, with the
// project's backoff, logging each failure retried (as pipeline's requests
// do).
func retry(ctx context.Context, log *slog.Logger, op string, f func() error) error {
	attempt := 0
	err := bulk.Retry(ctx, bulk.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second},
		bulk.Transient, func(err error, wait time.Duration) {
			attempt++
			log.Warn("request failed; retrying", "step", op, "attempt", attempt, "in", wait, "error", err)
		}, f)
	if err != nil {
		return fmt.Errorf("pipeline: %s: %w", op, err)
	}
	return nil
}
