package kafkarange_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/geoshard/geoshard/internal/kafkatest"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/kafkarange"
)

// fill starts a cluster with topic t of one partition holding n records,
// produced in one batch, value "v<offset>", and returns a reader of it.
func fill(t *testing.T, n int) (*kafkatest.Cluster, kafkarange.Reader, string) {
	t.Helper()
	topic := realenv.Unique("range")
	c := kafkatest.Start(t, kafkatest.WithTopic(topic, 1))
	msgs := make([]kafkatest.Message, n)
	for i := range msgs {
		msgs[i] = kafkatest.Message{Key: []byte("k"), Value: []byte("v" + strconv.Itoa(i))}
	}
	if n > 0 {
		if _, err := c.ProduceBatch(context.Background(), topic, msgs); err != nil {
			t.Fatal(err)
		}
	}
	// A transport of its own: kafka-go's default one is shared by every
	// client of the process and answers metadata from a cache that
	// learns a topic created since only at its next refresh.
	client := &kafka.Client{Addr: kafka.TCP(c.Addrs()...), Timeout: 10 * time.Second, Transport: &kafka.Transport{}}
	return c, kafkarange.Reader{Client: client}, topic
}

// collect reads rg and returns the values handed over.
func collect(t *testing.T, rd kafkarange.Reader, rg kafkarange.Range) ([]string, kafkarange.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), realenv.Slack(20*time.Second))
	defer cancel()
	var got []string
	res, err := rd.Read(ctx, rg, func(r *kafka.Record) error {
		v, err := kafka.ReadAll(r.Value)
		if err != nil {
			return err
		}
		if want := fmt.Sprintf("v%d", r.Offset); string(v) != want {
			return fmt.Errorf("record %d holds %q, want %q", r.Offset, v, want)
		}
		got = append(got, string(v))
		return nil
	})
	return got, res, err
}

func values(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, "v"+strconv.Itoa(i))
	}
	return out
}

func TestRead(t *testing.T) {
	_, rd, topic := fill(t, 10)
	for _, tc := range []struct {
		name     string
		from     int64
		end      int64
		maxBytes int64
		want     []string
		next     int64
	}{
		{name: "whole partition", from: 0, end: kafkarange.HighWatermark, want: values(0, 10), next: 10},
		{name: "from the log's start", from: kafka.FirstOffset, end: kafkarange.HighWatermark, want: values(0, 10), next: 10},
		{name: "middle of one batch", from: 3, end: 7, want: values(3, 7), next: 7},
		{name: "to the high watermark from the middle", from: 6, end: kafkarange.HighWatermark, want: values(6, 10), next: 10},
		{name: "end past the high watermark stops short", from: 8, end: 20, want: values(8, 10), next: 10},
		{name: "empty range", from: 4, end: 4, next: 4},
		{name: "at the high watermark", from: 10, end: kafkarange.HighWatermark, next: 10},
		{name: "small fetches", from: 0, end: kafkarange.HighWatermark, maxBytes: 1, want: values(0, 10), next: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			maxBytes := tc.maxBytes
			if maxBytes == 0 {
				maxBytes = 1 << 20
			}
			got, res, err := collect(t, rd, kafkarange.Range{Topic: topic, From: tc.from, End: tc.end, MaxBytes: maxBytes})
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("Read(%d, %d) = %v, want %v", tc.from, tc.end, got, tc.want)
			}
			if res.Next != tc.next {
				t.Errorf("Read(%d, %d) ended at %d, want %d", tc.from, tc.end, res.Next, tc.next)
			}
			if short := tc.end != kafkarange.HighWatermark && tc.next < tc.end; res.Short != short {
				t.Errorf("Read(%d, %d) short = %v, want %v", tc.from, tc.end, res.Short, short)
			}
		})
	}
}

func TestReadStop(t *testing.T) {
	_, rd, topic := fill(t, 10)
	var seen []int64
	res, err := rd.Read(context.Background(), kafkarange.Range{Topic: topic, From: 2, End: kafkarange.HighWatermark, MaxBytes: 1 << 20},
		func(r *kafka.Record) error {
			seen = append(seen, r.Offset)
			if r.Offset == 4 {
				return kafkarange.ErrStop
			}
			return nil
		})
	if err != nil || fmt.Sprint(seen) != "[2 3 4]" || res.Next != 5 {
		t.Errorf("Read stopped at 4 = %v, next %d, %v; want [2 3 4], 5, nil", seen, res.Next, err)
	}
	boom := errors.New("boom")
	_, err = rd.Read(context.Background(), kafkarange.Range{Topic: topic, From: 0, End: kafkarange.HighWatermark, MaxBytes: 1 << 20},
		func(*kafka.Record) error { return boom })
	if err != boom {
		t.Errorf("Read whose callback fails = %v, want the callback's error as it is", err)
	}
}

// A range that starts below the log's start reads from the start; one
// above the high watermark is the broker's refusal, not retried.
func TestReadOutOfRange(t *testing.T) {
	c, rd, topic := fill(t, 10)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 4})
	resp, err := kadm.NewClient(cl).DeleteRecords(context.Background(), offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("delete records: %v", err)
	}
	got, res, err := collect(t, rd, kafkarange.Range{Topic: topic, From: 1, End: 8, MaxBytes: 1 << 20})
	if err != nil || fmt.Sprint(got) != fmt.Sprint(values(4, 8)) || res.Next != 8 {
		t.Errorf("Read(1, 8) below the log's start 4 = %v, next %d, %v; want %v", got, res.Next, err, values(4, 8))
	}

	retries := 0
	rd.Retry = func(ctx context.Context, fetch func() error) error {
		for {
			err := fetch()
			var perm *backoff.PermanentError
			if err == nil || errors.As(err, &perm) || retries > 3 {
				return err
			}
			retries++
		}
	}
	_, res, err = collect(t, rd, kafkarange.Range{Topic: topic, From: 12, End: kafkarange.HighWatermark, MaxBytes: 1 << 20})
	if !errors.Is(err, kafka.OffsetOutOfRange) || retries != 0 || res.Next != 12 {
		t.Errorf("Read(12) above the high watermark = next %d, %v after %d retries; want OffsetOutOfRange at 12, not retried", res.Next, err, retries)
	}
}

func TestPartitionCounts(t *testing.T) {
	c, rd, topic := fill(t, 0)
	if err := c.CreateTopic(context.Background(), topic+"-six", 6); err != nil {
		t.Fatal(err)
	}
	counts, err := kafkarange.PartitionCounts(context.Background(), rd.Client, topic, topic+"-six", topic+"-missing")
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 2 || counts[topic] != 1 || counts[topic+"-six"] != 6 {
		t.Errorf("PartitionCounts = %v, want %s 1, %s-six 6 and no missing topic", counts, topic, topic)
	}
}
