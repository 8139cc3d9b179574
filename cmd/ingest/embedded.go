package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/cli"
	"github.com/geoshard/geoshard/internal/datagen"
	"github.com/geoshard/geoshard/internal/kafkatest"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/pipeline"
	"github.com/geoshard/geoshard/router"
	"github.com/prometheus/client_golang/prometheus"
)

const (
	embeddedIndex = "menu-v1"
	partitions    = 6
)

// stack is the embedded environment: a Kafka broker and an OpenSearch
// emulator in this process, and an index under a map planned from the
// bundled city data.
type stack struct {
	kafka  *kafkatest.Cluster
	osURL  string
	osSrv  *http.Server
	osDone chan struct{}
	m      *router.Map
	client *bulk.Admin
}

func loopback(flagName, addr string) (string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", cli.UsageError{Err: fmt.Errorf("%s %q: want host:port", flagName, addr)}
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", cli.UsageError{Err: fmt.Errorf("%s %q: the embedded servers listen on loopback addresses only", flagName, addr)}
	}
	return addr, nil
}

func startStack(ctx context.Context, o *options, addrs embeddedAddrs, logger *slog.Logger) (*stack, error) {
	osAddr, kAddr := addrs.opensearch, addrs.kafka
	_, kPort, _ := net.SplitHostPort(kAddr)
	port, err := strconv.Atoi(kPort)
	if err != nil {
		return nil, cli.UsageError{Err: fmt.Errorf("--embedded-kafka %q: bad port", kAddr)}
	}

	s := &stack{osDone: make(chan struct{})}
	ln, err := net.Listen("tcp", osAddr)
	if err != nil {
		return nil, busyPort(portUse{osAddr, "--embedded-opensearch", "the embedded OpenSearch emulator"}, err)
	}
	s.osURL = "http://" + ln.Addr().String()
	s.osSrv = &http.Server{Handler: osfake.New(osfake.Options{}), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(s.osDone)
		s.osSrv.Serve(ln)
	}()

	s.kafka, err = kafkatest.New(
		kafkatest.WithInProcess(),
		kafkatest.WithPorts(port),
		kafkatest.WithTopic(o.pipe.RestaurantTopic, partitions),
		kafkatest.WithTopic(o.pipe.DishTopic, partitions),
		kafkatest.WithTopic(o.pipe.DLQTopic, 1),
	)
	if err != nil {
		s.close()
		return nil, fmt.Errorf("embedded Kafka: %w", err)
	}

	// The map: planned from the bundled city data, 650,000 US restaurants
	// and their dishes, as `reshard plan --loads testdata/loads/us.csv
	// --shards 18` does.
	cities, err := datagen.Cities()
	if err != nil {
		s.close()
		return nil, err
	}
	rs, err := datagen.Generate(cities, datagen.DefaultUS())
	if err != nil {
		s.close()
		return nil, err
	}
	s.m, err = router.Plan(datagen.Loads(rs, router.DefaultLevel), nil, router.PlanConfig{Shards: 18})
	if err != nil {
		s.close()
		return nil, err
	}
	client, err := bulk.NewClient(bulk.ClientConfig{Addresses: []string{s.osURL}})
	if err != nil {
		s.close()
		return nil, err
	}
	s.client = bulk.NewAdmin(client)
	if err := migrate.Init(ctx, s.client, migrate.InitConfig{Map: s.m, Index: embeddedIndex, Alias: o.pipe.Alias}); err != nil {
		s.close()
		return nil, err
	}
	logger.Info("embedded stack up", "kafka", s.kafka.Addrs()[0], "opensearch", s.osURL, "index", embeddedIndex, "map_hash", s.m.ShortHash())
	return s, nil
}

func (s *stack) close() {
	if s.kafka != nil {
		s.kafka.Close()
	}
	if s.osSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		s.osSrv.Shutdown(ctx)
		cancel()
		<-s.osDone
	}
}

// produce generates the demo event stream from the bundled data and
// produces it. It returns the messages by kind.
func (s *stack) produce(ctx context.Context, o *options) (map[string]int, int, error) {
	if o.demoEvents == 0 {
		return nil, 0, nil
	}
	cities, err := datagen.Cities()
	if err != nil {
		return nil, 0, err
	}
	cfg := datagen.DefaultStreamConfig()
	cfg.RestaurantTopic, cfg.DishTopic = o.pipe.RestaurantTopic, o.pipe.DishTopic
	cfg.SizeFor(o.demoEvents)
	msgs, err := datagen.Stream(cities, cfg)
	if err != nil {
		return nil, 0, err
	}
	kinds := map[string]int{}
	byTopic := map[string][]kafkatest.Message{}
	n := 0
	for _, m := range msgs {
		if m.Kind == datagen.KindPoisonOversized {
			// Over the producer's 1 MB record limit: a broker would refuse
			// it before the pipeline could. The pipeline's tests cover
			// oversized events.
			continue
		}
		key := m.Key
		if o.pipe.DishKey == pipeline.DishKeyDish && m.Topic == o.pipe.DishTopic {
			// Keyed as a change-data-capture tool keys a row, by its own id.
			if c, _ := decode.Decode(nil, m.Value, 0); c != nil && c.ID != "" {
				key = []byte(c.ID)
			}
		}
		n++
		kinds[m.Kind]++
		byTopic[m.Topic] = append(byTopic[m.Topic], kafkatest.Message{Key: key, Value: m.Value})
	}
	for topic, ms := range byTopic {
		if _, err := s.kafka.ProduceBatch(ctx, topic, ms); err != nil {
			return nil, 0, err
		}
	}
	return kinds, n, nil
}

// embeddedAddrs are the addresses the embedded mode listens on.
type embeddedAddrs struct {
	opensearch, kafka, metrics string
}

// resolveEmbeddedAddrs checks the embedded servers' addresses and makes
// the metrics address loopback where it names no host: the deployment's
// default ":9464" serves every interface, the embedded mode, like its
// broker and emulator, only this machine ("0.0.0.0:9464" still serves
// every interface).
func resolveEmbeddedAddrs(o *options) (embeddedAddrs, error) {
	var a embeddedAddrs
	var err error
	if a.opensearch, err = loopback("--embedded-opensearch", o.embOS); err != nil {
		return a, err
	}
	if a.kafka, err = loopback("--embedded-kafka", o.embKafka); err != nil {
		return a, err
	}
	a.metrics = o.metricsAddr
	if host, port, err := net.SplitHostPort(a.metrics); err == nil && host == "" {
		a.metrics = net.JoinHostPort("127.0.0.1", port)
	}
	return a, nil
}

// portUse is an address the embedded mode will listen on, the flag that
// moves it, and what listens there.
type portUse struct {
	addr, flag, what string
}

func (a embeddedAddrs) uses() []portUse {
	return []portUse{
		{a.metrics, "--metrics-addr", "the metrics server"},
		{a.kafka, "--embedded-kafka", "the embedded Kafka broker"},
		{a.opensearch, "--embedded-opensearch", "the embedded OpenSearch emulator"},
	}
}

// checkPorts listens on every address that names a port (not 0, which
// takes a free one) and lets it go again, so that a port another process
// holds stops the run before any work, not after the stack is up and the
// events produced. Another process could take the port in between; the
// listen itself then fails as it would have anyway.
func checkPorts(uses []portUse) error {
	for _, u := range uses {
		_, port, err := net.SplitHostPort(u.addr)
		if u.addr == "" || err != nil || port == "0" {
			continue
		}
		ln, err := net.Listen("tcp", u.addr)
		if err != nil {
			return busyPort(u, err)
		}
		ln.Close()
	}
	return nil
}

// busyPort is the usage error of an address that cannot be listened on.
func busyPort(u portUse, err error) error {
	host, port, _ := net.SplitHostPort(u.addr)
	if host == "" {
		host = "127.0.0.1"
	}
	fix := fmt.Sprintf("move it with %s %s (a free port)", u.flag, net.JoinHostPort(host, "0"))
	if u.flag == "--metrics-addr" {
		fix += " or --metrics-addr '' (no metrics)"
	}
	return cli.UsageError{Err: fmt.Errorf("port %s: %s cannot listen on %s: %v; stop what holds port %s (ss -ltnp 'sport = :%s' names it), or %s",
		port, u.what, u.addr, err, port, port, fix)}
}

func runEmbedded(ctx context.Context, o *options, logger *slog.Logger, stdout io.Writer) error {
	start := time.Now()
	addrs, err := resolveEmbeddedAddrs(o)
	if err != nil {
		return err
	}
	if err := checkPorts(addrs.uses()); err != nil {
		return err
	}
	s, err := startStack(ctx, o, addrs, logger)
	if err != nil {
		return err
	}
	defer s.close()
	stackUp := time.Now()
	kinds, produced, err := s.produce(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "embedded: Kafka %s, OpenSearch %s\n", s.kafka.Addrs()[0], s.osURL)
	fmt.Fprintf(stdout, "embedded: index %s, map %s (%d shards), %d events produced\n",
		embeddedIndex, s.m.ShortHash(), s.m.NumShards(), produced)

	o.pipe.Brokers = s.kafka.Addrs()
	o.pipe.Logger = logger
	if !o.serve {
		// The progress bar says it all until the summary; with --serve
		// the log's progress line follows what comes after.
		o.pipe.ProgressInterval = 0
	}
	if o.pipe.PendingMaxAge == 0 {
		// The demo's orphan dishes never see their restaurant: let them
		// reach the dead-letter topic in seconds rather than minutes.
		o.pipe.PendingMaxAge = 3 * time.Second
	}
	reg := prometheus.NewRegistry()
	o.pipe.Registerer = reg
	bar := newProgressBar(stdout, produced)
	o.pipe.OnProgress = bar.update
	client, err := bulk.NewClient(bulk.ClientConfig{Addresses: []string{s.osURL}})
	if err != nil {
		return err
	}
	p, err := pipeline.New(o.pipe, client)
	if err != nil {
		return err
	}
	stopHTTP, _, err := serveHTTP(addrs.metrics, o.pprof, reg, p, logger)
	if err != nil {
		return err
	}
	defer stopHTTP()

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var runErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runErr = p.Run(runCtx)
	}()
	consuming := time.Now()
	bar.legend()
	tl, waitErr := waitDone(ctx, p, produced, o.summaryLimit)
	tl.start, tl.stackUp, tl.consuming = start, stackUp, consuming
	if !o.serve || waitErr != nil {
		cancel()
		wg.Wait()
		if runErr != nil {
			bar.finish(p.Stats())
			return runErr
		}
	}
	bar.finish(p.Stats())
	if waitErr != nil {
		return waitErr
	}
	if err := s.client.Refresh(ctx, embeddedIndex); err != nil {
		return err
	}
	sum, err := gatherSummary(ctx, s, p, reg, kinds, produced)
	if err != nil {
		return err
	}
	// The summary's last figure is the whole run, to the summary itself:
	// the clock stops once the searches it reports are done.
	tl.summarized = time.Now()
	sum.tl = tl
	if err := sum.write(stdout, o.wide); err != nil {
		return err
	}
	logger.Info("embedded run summarized", "took", sum.phases().whole().String(), "from", "the start of the command")
	if !o.serve {
		return nil
	}
	// The whole job keeps running: the pipeline consumes what is produced
	// from now on, writes its heartbeat and serves its metrics, until
	// interrupted.
	fmt.Fprintf(stdout, "\nserving until interrupted: Kafka %s, OpenSearch %s;\ningest keeps consuming %s and %s\n",
		s.kafka.Addrs()[0], s.osURL, o.pipe.RestaurantTopic, o.pipe.DishTopic)
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-ctx.Done():
	case <-done:
	}
	cancel()
	<-done
	return runErr
}

// timeline is when the embedded run reached each point, on one clock.
type timeline struct {
	start      time.Time // runEmbedded began: the command's start, before the stack
	stackUp    time.Time // the broker, the emulator, the map and the index were ready
	consuming  time.Time // the events were produced and the pipeline started
	first      time.Time // the first event finished
	settled    time.Time // every event finished but the dishes still waiting for a restaurant
	done       time.Time // every event finished and committed
	summarized time.Time // the summary's counts and searches were done
	waiting    int64     // dishes that were waiting at settled
}

// waitDone waits until every produced event is finished and committed,
// and says when the run got where.
func waitDone(ctx context.Context, p *pipeline.Pipeline, produced int, limit time.Duration) (timeline, error) {
	var tl timeline
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		st, now := p.Stats(), time.Now()
		if tl.first.IsZero() && st.Finished > 0 {
			tl.first = now
		}
		if tl.settled.IsZero() && st.Fetched >= int64(produced) && st.Finished+int64(st.Pending) >= int64(produced) {
			tl.settled, tl.waiting = now, int64(st.Pending)
		}
		if st.Fetched >= int64(produced) && st.Lag == 0 && st.Pending == 0 && st.Finished >= st.Fetched {
			tl.done = now
			if tl.first.IsZero() {
				tl.first = now
			}
			if tl.settled.IsZero() {
				tl.settled = now
			}
			return tl, nil
		}
		select {
		case <-ctx.Done():
			return tl, ctx.Err()
		case <-deadline.C:
			return tl, errors.New("embedded: the events were not all processed in time (see --embedded-timeout)")
		case <-tick.C:
		}
	}
}
