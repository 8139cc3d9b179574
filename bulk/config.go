package bulk

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// Secret is a password or key that never prints: fmt (also inside structs,
// even behind unexported fields), slog and JSON show "[redacted]" or a
// pointer, never the value. The zero Secret is empty.
type Secret struct {
	// p points at the value. A pointer, not a string: fmt prints a
	// nested pointer as an address where it cannot call String.
	p *string
}

// NewSecret wraps a value.
func NewSecret(v string) Secret {
	if v == "" {
		return Secret{}
	}
	return Secret{p: &v}
}

// Reveal returns the value, for the one place that sends it.
func (s Secret) Reveal() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}

// IsZero reports an empty secret.
func (s Secret) IsZero() bool { return s.p == nil || *s.p == "" }

func (Secret) String() string                 { return "[redacted]" }
func (Secret) GoString() string               { return "[redacted]" }
func (Secret) LogValue() slog.Value           { return slog.StringValue("[redacted]") }
func (Secret) MarshalJSON() ([]byte, error)   { return []byte(`"[redacted]"`), nil }
func (s Secret) MarshalText() ([]byte, error) { return []byte("[redacted]"), nil }

// ClientConfig says how to reach OpenSearch.
type ClientConfig struct {
	// Addresses are the node URLs, e.g. https://search-1:9200. Required.
	Addresses []string
	// Username and Password enable HTTP basic auth when Username is set.
	Username string
	Password Secret
	// CACertFile is a PEM file of CA certificates to trust, for TLS.
	CACertFile string
	// InsecureSkipVerify disables TLS certificate verification. Only for
	// tests against self-signed clusters.
	InsecureSkipVerify bool
	// RequestTimeout bounds one HTTP request. Default 60s.
	RequestTimeout time.Duration
	// Gzip asks the cluster to gzip its responses. It saves bandwidth over
	// a slow link and costs CPU on both sides — on the nodes, which do the
	// indexing: a node compresses every bulk response (about 150 bytes an
	// item) and search page. Default off.
	Gzip bool
}

// Validate reports every bad field at once.
func (c ClientConfig) Validate() error {
	var p []string
	if len(c.Addresses) == 0 {
		p = append(p, "addresses: none given; want at least one URL such as http://127.0.0.1:9200")
	}
	for _, a := range c.Addresses {
		u, err := url.Parse(a)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p = append(p, fmt.Sprintf("address %q: want an http:// or https:// URL with a host", a))
		}
	}
	if !c.Password.IsZero() && c.Username == "" {
		p = append(p, "password given without a username")
	}
	if c.RequestTimeout < 0 {
		p = append(p, fmt.Sprintf("request timeout %v: must not be negative", c.RequestTimeout))
	}
	if len(p) > 0 {
		return errors.New("bulk: client config: " + strings.Join(p, "; "))
	}
	return nil
}

// NewClient builds an opensearch-go client. The client's own retries are
// disabled: the Writer decides what is resent, item by item, and a
// transport that also retried would send items the Writer counts once
// several times.
func NewClient(c ClientConfig) (*opensearch.Client, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.InsecureSkipVerify} // #nosec G402 -- opt-in for tests
	if c.CACertFile != "" {
		pool, err := CertPool(c.CACertFile)
		if err != nil {
			return nil, err
		}
		tlsConf.RootCAs = pool
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConf
	tr.MaxIdleConnsPerHost = 64
	tr.DisableCompression = !c.Gzip
	timeout := c.RequestTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	return opensearch.NewClient(opensearch.Config{
		Addresses:             c.Addresses,
		Username:              c.Username,
		Password:              c.Password.Reveal(),
		Transport:             tr,
		DisableRetry:          true,
		RequestTimeout:        timeout,
		HealthCheckMaxRetries: -1,
	})
}

// Config configures a Writer. Every zero field takes the default named in
// its comment.
type Config struct {
	// Workers is the number of goroutines sending batches. Default 4.
	Workers int
	// FlushItems sends a batch when it holds this many items. Default 1,000.
	FlushItems int
	// FlushBytes sends a batch when its body reaches this size. Default 5 MiB.
	FlushBytes int
	// FlushInterval sends a batch this long after its first item arrived,
	// however small it is (linger). Default 50ms.
	FlushInterval time.Duration
	// ShardConcurrency is the number of requests one shard key may have in
	// flight: its queue is split into that many lanes by document id, and
	// each lane sends one batch at a time. Default 1.
	ShardConcurrency int
	// MaxBufferedBytes and MaxBufferedItems bound everything the writer
	// holds (queued, in flight or waiting to retry); Add blocks beyond them.
	// Defaults 64 MiB and 100,000 items.
	MaxBufferedBytes int
	MaxBufferedItems int
	// MaxShardItems bounds what one shard key may hold, so a hot shard
	// cannot take the whole budget. Default 4·FlushItems.
	MaxShardItems int
	// RetryInitial and RetryMax bound the backoff between attempts:
	// attempt n waits a uniformly random time in [0, min(RetryMax,
	// RetryInitial·2^n)) (full jitter). Defaults 100ms and 10s.
	RetryInitial time.Duration
	RetryMax     time.Duration
	// RetryMaxElapsed is an item's retry budget, from its first attempt;
	// past it the item fails with ErrRetryBudget. Default 10 minutes;
	// NoRetryLimit retries an item until it succeeds, fails for good or
	// the writer is closed (a consumer whose every write must land, and
	// that blocks on back-pressure meanwhile).
	RetryMaxElapsed time.Duration
	// OnResult receives every item's outcome, from worker goroutines,
	// concurrently; it must be quick. Optional.
	OnResult func(Result)
	// Withdraw, asked of each item as its batch is cut (first attempt and
	// every retry alike), withdraws the items it returns true for: they
	// are never sent (again), and end Failed with ErrWithdrawn. A caller
	// whose right to write has ended (a consumer whose partitions moved to
	// another member) withdraws what it had queued, while the requests
	// already on the wire end as they will. It is called with the
	// writer's lock held: it must be quick and must not call the writer.
	// Optional.
	Withdraw func(*Item) bool
	// Registerer registers the writer's Prometheus metrics. Optional.
	Registerer prometheus.Registerer
	// Logger receives warnings (retries, failures). Default: discard.
	Logger *slog.Logger
}

// Defaults.
const (
	DefaultWorkers          = 4
	DefaultFlushItems       = 1000
	DefaultFlushBytes       = 5 << 20
	DefaultFlushInterval    = 50 * time.Millisecond
	DefaultShardConcurrency = 1
	DefaultMaxBufferedBytes = 64 << 20
	DefaultMaxBufferedItems = 100_000
	DefaultRetryInitial     = 100 * time.Millisecond
	DefaultRetryMax         = 10 * time.Second
	DefaultRetryMaxElapsed  = 10 * time.Minute
)

// NoRetryLimit, as Config.RetryMaxElapsed, gives items no retry budget.
const NoRetryLimit time.Duration = -1

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Workers, DefaultWorkers)
	def(&c.FlushItems, DefaultFlushItems)
	def(&c.FlushBytes, DefaultFlushBytes)
	def(&c.ShardConcurrency, DefaultShardConcurrency)
	def(&c.MaxBufferedBytes, DefaultMaxBufferedBytes)
	def(&c.MaxBufferedItems, DefaultMaxBufferedItems)
	def(&c.MaxShardItems, 4*c.FlushItems)
	defD(&c.FlushInterval, DefaultFlushInterval)
	defD(&c.RetryInitial, DefaultRetryInitial)
	defD(&c.RetryMax, DefaultRetryMax)
	defD(&c.RetryMaxElapsed, DefaultRetryMaxElapsed)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports every bad field at once.
func (c Config) Validate() error {
	c = c.withDefaults()
	var p []string
	pos := func(name string, v int) {
		if v < 1 {
			p = append(p, fmt.Sprintf("%s %d: must be at least 1", name, v))
		}
	}
	pos("workers", c.Workers)
	pos("flush items", c.FlushItems)
	pos("flush bytes", c.FlushBytes)
	pos("shard concurrency", c.ShardConcurrency)
	pos("max buffered bytes", c.MaxBufferedBytes)
	pos("max buffered items", c.MaxBufferedItems)
	pos("max shard items", c.MaxShardItems)
	if c.FlushInterval < 0 || c.RetryInitial < 0 || c.RetryMax < c.RetryInitial || c.RetryMaxElapsed < 0 && c.RetryMaxElapsed != NoRetryLimit {
		p = append(p, fmt.Sprintf("durations: flush interval %v, retry initial %v, retry max %v, retry max elapsed %v: want non-negative (retry max elapsed may be NoRetryLimit) with retry max >= retry initial",
			c.FlushInterval, c.RetryInitial, c.RetryMax, c.RetryMaxElapsed))
	}
	if c.MaxShardItems > c.MaxBufferedItems {
		p = append(p, fmt.Sprintf("max shard items %d exceeds max buffered items %d", c.MaxShardItems, c.MaxBufferedItems))
	}
	if len(p) > 0 {
		return errors.New("bulk: config: " + strings.Join(p, "; "))
	}
	return nil
}

// CertPool reads a PEM file of CA certificates to trust; the Kafka side of
// ingest uses it too.
func CertPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("CA certificate file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA certificate file %s holds no PEM certificate", file)
	}
	return pool, nil
}
