package migrate

import (
	"fmt"
	"time"

	"github.com/geoshard/geoshard/schema"
)

// describe says what an instance is doing as its heartbeat tells at now:
// its state, and for a waiting one what it waits for, since when and the
// last error; for one whose heartbeat is older than the live window, how
// long it has not been heard from. An instance that predates the state
// in heartbeats says nothing of it: "".
func describe(hb schema.Heartbeat, live bool, now time.Time) string {
	if !live {
		return fmt.Sprintf("not heard from for %ds (stopped, or cannot reach OpenSearch)", int64(now.Sub(hb.At)/time.Second))
	}
	var s string
	switch hb.State {
	case "":
		return ""
	case schema.InstanceConsuming:
		return string(hb.State)
	case schema.InstanceStarting:
		s = "starting"
	case schema.InstanceNoBroker:
		s = "waiting for the Kafka brokers"
	case schema.InstanceNoOpenSearch:
		s = "waiting for OpenSearch"
	default:
		s = string(hb.State)
	}
	if !hb.Since.IsZero() {
		s += fmt.Sprintf(" since %s (%v)", hb.Since.UTC().Format(time.RFC3339), now.Sub(hb.Since).Round(time.Second))
	}
	if hb.Waiting != "" {
		s += ": " + hb.Waiting
	}
	return s
}
