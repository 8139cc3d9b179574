package benchrun

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Kafka is the broker's admin API, as the harness uses it.
type Kafka struct {
	cl  *kgo.Client
	adm *kadm.Client
}

// DialKafka connects to the brokers (lazily: the first request dials).
func DialKafka(brokers []string) (*Kafka, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, fmt.Errorf("benchrun: kafka client: %w", err)
	}
	return &Kafka{cl: cl, adm: kadm.NewClient(cl)}, nil
}

// Close closes the client.
func (k *Kafka) Close() { k.cl.Close() }

// CreateTopics creates topics with partitions partitions and one replica;
// one that exists already is an error (the harness's names are fresh).
func (k *Kafka) CreateTopics(ctx context.Context, partitions int, topics ...string) error {
	rs, err := k.adm.CreateTopics(ctx, int32(partitions), 1, nil, topics...)
	if err != nil {
		return fmt.Errorf("benchrun: create topics %v: %w", topics, err)
	}
	for _, r := range rs.Sorted() {
		if r.Err != nil {
			return fmt.Errorf("benchrun: create topic %s: %w", r.Topic, r.Err)
		}
	}
	return nil
}

// DeleteTopics deletes topics; missing ones are not an error.
func (k *Kafka) DeleteTopics(ctx context.Context, topics ...string) error {
	if len(topics) == 0 {
		return nil
	}
	rs, err := k.adm.DeleteTopics(ctx, topics...)
	if err != nil {
		return fmt.Errorf("benchrun: delete topics %v: %w", topics, err)
	}
	var errs []error
	for _, r := range rs.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			errs = append(errs, fmt.Errorf("benchrun: delete topic %s: %w", r.Topic, r.Err))
		}
	}
	return errors.Join(errs...)
}

// DeleteGroups deletes consumer groups; missing ones are not an error.
func (k *Kafka) DeleteGroups(ctx context.Context, groups ...string) error {
	if len(groups) == 0 {
		return nil
	}
	rs, err := k.adm.DeleteGroups(ctx, groups...)
	if err != nil {
		return fmt.Errorf("benchrun: delete groups %v: %w", groups, err)
	}
	var errs []error
	for g, r := range rs {
		if r.Err != nil && !errors.Is(r.Err, kerr.GroupIDNotFound) {
			errs = append(errs, fmt.Errorf("benchrun: delete group %s: %w", g, r.Err))
		}
	}
	return errors.Join(errs...)
}

// StartOffsets are the first offsets of every partition of topics.
func (k *Kafka) StartOffsets(ctx context.Context, topics ...string) (Offsets, error) {
	l, err := k.adm.ListStartOffsets(ctx, topics...)
	return listed(l, err, "start", topics)
}

// EndOffsets are the end offsets (the next offset to be written) of every
// partition of topics.
func (k *Kafka) EndOffsets(ctx context.Context, topics ...string) (Offsets, error) {
	l, err := k.adm.ListEndOffsets(ctx, topics...)
	return listed(l, err, "end", topics)
}

func listed(l kadm.ListedOffsets, err error, which string, topics []string) (Offsets, error) {
	if err == nil {
		err = l.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("benchrun: list %s offsets of %v: %w", which, topics, err)
	}
	o := Offsets{}
	l.Each(func(lo kadm.ListedOffset) { o.Set(lo.Topic, lo.Partition, lo.Offset) })
	for _, t := range topics {
		if len(o[t]) == 0 {
			return nil, fmt.Errorf("benchrun: topic %s has no partitions", t)
		}
	}
	return o, nil
}

// Committed are a group's committed offsets; a group that has committed
// nothing yet has none.
func (k *Kafka) Committed(ctx context.Context, group string) (Offsets, error) {
	rs, err := k.adm.FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return Offsets{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("benchrun: fetch offsets of group %s: %w", group, err)
	}
	o := Offsets{}
	rs.Each(func(r kadm.OffsetResponse) {
		if r.Err == nil && r.At >= 0 {
			o.Set(r.Topic, r.Partition, r.At)
		}
	})
	return o, nil
}
