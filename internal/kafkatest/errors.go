package kafkatest

import "errors"

// ErrClosed is returned by every Cluster method called after Close.
var ErrClosed = errors.New("kafkatest: cluster closed")

// ErrUnknownTopic is returned when a call names a topic the cluster does
// not have. Topics are never created implicitly: a test that forgets to
// declare one fails at once instead of waiting out client retries.
var ErrUnknownTopic = errors.New("kafkatest: unknown topic")
