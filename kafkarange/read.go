package kafkarange

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/segmentio/kafka-go"
)

// HighWatermark, as a Range's End, reads up to the partition's high
// watermark as each fetch reports it: the partition's end as it is now,
// following it while it grows during the read.
const HighWatermark int64 = math.MaxInt64

// ErrStop, returned by a Read callback, ends the read without an error.
var ErrStop = errors.New("kafkarange: stop")

// Range is what Read reads: records of one partition from From up to End.
type Range struct {
	Topic     string
	Partition int
	// From is the first offset read. kafka.FirstOffset reads from the
	// log's start, and so does an offset below it (records deleted since
	// the offset was learnt).
	From int64
	// End is the offset the read stops before (a record at End or after
	// it, in a batch that crosses it, is not handed over), or
	// HighWatermark.
	End int64
	// MaxBytes bounds the response of one fetch.
	MaxBytes int64
}

// Retry runs fetch until it succeeds, fails with an error marked
// backoff.Permanent, the caller's policy gives up, or ctx ends, and
// returns its last error (wrapped as the caller likes: Read looks for
// kafka.OffsetOutOfRange with errors.Is).
type Retry func(ctx context.Context, fetch func() error) error

// Reader reads ranges of partitions.
type Reader struct {
	Client *kafka.Client
	// Retry is the caller's retry policy for one fetch; nil fetches once.
	Retry Retry
}

// Result is where a read ended.
type Result struct {
	// Next is the offset after the last record handed over; the range's
	// From if none was.
	Next int64
	// HighWatermark is the partition's high watermark as the last fetch
	// reported it; -1 before any fetch answered.
	HighWatermark int64
	// Short reports that the read ended before the range's end: a fetch
	// at Next returned no record of the range (what is left is transaction
	// markers, or the partition's end moved back below End).
	Short bool
}

// fetchWait is how long a fetch waits for records. Fetches ask for
// MinBytes 0, so the broker answers at once with what the partition holds
// (an empty partition would otherwise be waited on for MaxWait).
const fetchWait = 100 * time.Millisecond

// Read hands fn each record of rg, in offset order, until the range's
// end, fn returns ErrStop (Read then returns nil) or another error (Read
// returns it as it is), or a fetch fails. A fetch is retried with
// rd.Retry, except for the broker's refusals that the same fetch would get
// again (any kafka.Error not Temporary): those end the read with the
// error, but for kafka.OffsetOutOfRange below the log's start, after
// which the read goes on from the log's start.
//
// A fetched batch may start before the offset asked for, and end after
// End: records outside the range are skipped. A record's Key and Value
// are closed once fn returns: fn copies what it keeps (kafka.ReadAll).
// On an error, Result says where the read was.
func (rd Reader) Read(ctx context.Context, rg Range, fn func(*kafka.Record) error) (Result, error) {
	res := Result{Next: rg.From, HighWatermark: -1}
	upToEnd := rg.End == HighWatermark
	for upToEnd || res.Next < rg.End {
		var fetched *kafka.FetchResponse
		err := rd.retry(ctx, func() error {
			var err error
			fetched, err = rd.Client.Fetch(ctx, &kafka.FetchRequest{
				Topic: rg.Topic, Partition: rg.Partition, Offset: res.Next, MinBytes: 0, MaxBytes: rg.MaxBytes, MaxWait: fetchWait,
			})
			if err == nil {
				err = fetched.Error
			}
			var ke kafka.Error
			if errors.As(err, &ke) && !ke.Temporary() {
				return backoff.Permanent(err) // OffsetOutOfRange below, or the broker's refusal
			}
			return err
		})
		if errors.Is(err, kafka.OffsetOutOfRange) {
			// Deleted since it was learnt: start at the log's start. The
			// emulated broker says where that is with the refusal; Kafka
			// answers -1 there, so it is asked.
			start := int64(-1)
			if fetched != nil {
				start = fetched.LogStartOffset
			}
			if start <= res.Next {
				if first, ferr := rd.logStart(ctx, rg); ferr == nil {
					start = first
				}
			}
			if start > res.Next {
				res.Next = start
				continue
			}
		}
		if err != nil {
			return res, err
		}
		res.HighWatermark = fetched.HighWatermark
		got := 0
		for {
			r, err := fetched.Records.ReadRecord()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return res, err
			}
			if r.Offset < res.Next {
				continue // a batch may start before the offset asked for
			}
			if !upToEnd && r.Offset >= rg.End {
				break // and end after the range's end
			}
			got++
			res.Next = r.Offset + 1
			err = fn(r)
			closeBytes(r.Key)
			closeBytes(r.Value)
			if errors.Is(err, ErrStop) {
				return res, nil
			}
			if err != nil {
				return res, err
			}
		}
		end := rg.End
		if upToEnd {
			end = fetched.HighWatermark
		}
		if res.Next >= end {
			return res, nil
		}
		if got == 0 {
			res.Short = true
			return res, nil
		}
	}
	return res, nil
}

func (rd Reader) retry(ctx context.Context, fetch func() error) error {
	if rd.Retry == nil {
		return fetch()
	}
	return rd.Retry(ctx, fetch)
}

func closeBytes(b kafka.Bytes) {
	if b != nil {
		b.Close()
	}
}

// PartitionCounts reads the topics' partition counts; a topic the broker
// does not know is left out.
func PartitionCounts(ctx context.Context, client *kafka.Client, topics ...string) (map[string]int, error) {
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, tp := range md.Topics {
		if tp.Error == nil && len(tp.Partitions) > 0 {
			counts[tp.Name] = len(tp.Partitions)
		}
	}
	return counts, nil
}

// logStart asks the broker for the first offset rg's partition holds.
func (rd Reader) logStart(ctx context.Context, rg Range) (int64, error) {
	resp, err := rd.Client.ListOffsets(ctx, &kafka.ListOffsetsRequest{
		Topics: map[string][]kafka.OffsetRequest{rg.Topic: {kafka.FirstOffsetOf(rg.Partition)}},
	})
	if err != nil {
		return 0, err
	}
	for _, p := range resp.Topics[rg.Topic] {
		if p.Partition == rg.Partition {
			return p.FirstOffset, p.Error
		}
	}
	return 0, fmt.Errorf("kafkarange: no first offset of %s/%d in the answer", rg.Topic, rg.Partition)
}
