package topics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/kafkarange"
)

// OwnTopicError is the refusal to start when a topic ingest owns (the
// repartition topic under --dish-key dish, the parking topic) is missing
// and cannot be created, or exists with another partition count than the
// restaurant topic's.
type OwnTopicError struct {
	// What is "repartition" or "parking".
	What                   string
	Topic, RestaurantTopic string
	// Partitions is the restaurant topic's partition count; Have the
	// topic's (0: missing).
	Partitions, Have int
	// Command is what an operator can run instead.
	Command string
	Err     error
}

func (e *OwnTopicError) Error() string {
	if e.Have > 0 {
		why := "dishes would not be in their restaurant's partition"
		if e.What == "parking" {
			why = "a partition's parked dishes would be read by another member than the partition's"
		}
		return fmt.Sprintf("pipeline: %s topic %q has %d partitions, the restaurant topic %q has %d: %s; %s",
			e.What, e.Topic, e.Have, e.RestaurantTopic, e.Partitions, why, e.Command)
	}
	return fmt.Sprintf("pipeline: cannot create the %s topic %q (%v); create it with the restaurant topic's %d partitions: %s",
		e.What, e.Topic, e.Err, e.Partitions, e.Command)
}

func (e *OwnTopicError) Unwrap() error { return e.Err }

// Own is one of ingest's own topics, kept with the restaurant topic's
// partition count.
type Own struct {
	What            string // what the topic is for, in messages: "repartition", "parking"
	Topic           string
	RestaurantTopic string
	Configs         []kafka.ConfigEntry // the topic's configs when it is created
	// Brokers and Group name the cluster and consumer group in the
	// commands a refusal gives.
	Brokers []string
	Group   string
}

// Ensure creates own's topic, with the restaurant topic's partition count
// and own's configs, if it is missing, and refuses one with another
// partition count.
func Ensure(ctx context.Context, client *kafka.Client, log *slog.Logger, own Own) error {
	what, topic, configs := own.What, own.Topic, own.Configs
	counts, err := kafkarange.PartitionCounts(ctx, client, own.RestaurantTopic, topic)
	if err != nil {
		return fmt.Errorf("pipeline: read the partition counts of %q and %q: %w", own.RestaurantTopic, topic, err)
	}
	n := counts[own.RestaurantTopic]
	if n == 0 {
		return fmt.Errorf("pipeline: restaurant topic %q not found: the %s topic %q takes its partition count", own.RestaurantTopic, what, topic)
	}
	bootstrap := strings.Join(own.Brokers, ",")
	if have := counts[topic]; have > 0 {
		if have == n {
			return nil
		}
		fix := fmt.Sprintf("kafka-topics.sh --bootstrap-server %s --alter --topic %s --partitions %d", bootstrap, topic, n)
		if have > n {
			fix = fmt.Sprintf("a topic's partitions cannot be removed: stop ingest once group %q has no lag on it, then delete it (ingest creates it again): kafka-topics.sh --bootstrap-server %s --delete --topic %s",
				own.Group, bootstrap, topic)
		}
		return &OwnTopicError{What: what, Topic: topic, RestaurantTopic: own.RestaurantTopic, Partitions: n, Have: have, Command: fix}
	}
	command := fmt.Sprintf("kafka-topics.sh --bootstrap-server %s --create --topic %s --partitions %d", bootstrap, topic, n)
	for _, c := range configs {
		command += " --config " + c.ConfigName + "=" + c.ConfigValue
	}
	resp, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: topic, NumPartitions: n, ReplicationFactor: -1, ConfigEntries: configs,
	}}})
	if err == nil {
		err = resp.Errors[topic]
	}
	if err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
		return &OwnTopicError{What: what, Topic: topic, RestaurantTopic: own.RestaurantTopic, Partitions: n, Command: command, Err: err}
	}
	if err == nil {
		log.Info("created the "+what+" topic", "topic", topic, "partitions", n)
	}
	// Created (by this instance or another): its count is confirmed at
	// the next start.
	return nil
}
