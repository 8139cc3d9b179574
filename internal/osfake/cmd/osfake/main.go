// Command osfake serves the in-process OpenSearch emulator of package
// osfake over HTTP, for trying the pipeline by hand and for demos:
//
//	go run ./internal/osfake/cmd/osfake -addr 127.0.0.1:9200
//
// It answers as OpenSearch 3.9.0 unless -version names another version
// it knows (-version 2.19.6 for the 2.x line).
//
// It serves until SIGINT or SIGTERM, then shuts down gracefully. State is
// in memory only. Exit status: 0 after a clean shutdown, 2 for bad flags,
// 1 for any other failure.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/geoshard/geoshard/internal/osfake"
)

// shutdownGrace bounds how long a shutdown waits for requests in flight
// (a cluster-health wait can hold one for its whole timeout).
const shutdownGrace = 5 * time.Second

// usageError is a bad flag or flag value: exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stderr, nil)
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return
	case errors.As(err, new(usageError)):
		fmt.Fprintln(os.Stderr, "osfake:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "osfake:", err)
		os.Exit(1)
	}
}

// run parses args, listens and serves until ctx is done. Logs go to
// stderr. ready, when not nil, is called with the listening address once
// connections are accepted (tests listen on port 0).
func run(ctx context.Context, args []string, stderr io.Writer, ready func(addr string)) error {
	fs := flag.NewFlagSet("osfake", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9200", "`host:port` to listen on; port 0 picks a free port")
	allowRemote := fs.Bool("allow-remote", false,
		"allow an address that is not loopback. The emulator is test machinery: it has no authentication,\n"+
			"keeps everything in memory and accepts any request, so it must not be reachable from other machines")
	clusterName := fs.String("cluster-name", "osfake", "cluster name reported by GET / and cluster health")
	version := fs.String("version", osfake.DefaultVersion, "OpenSearch `version` to report and answer as: "+osfake.AcceptedVersions)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if err := checkAddr(*addr, *allowRemote); err != nil {
		return usageError{err}
	}
	opts := osfake.Options{ClusterName: *clusterName, Version: *version}
	if opts.Validate() != nil {
		return usageError{fmt.Errorf("-version %q: the emulator answers as %s", *version, osfake.AcceptedVersions)}
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	srv := &http.Server{
		Handler:           osfake.New(opts),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("osfake listening", "addr", ln.Addr().String(), "version", opts.Version)
	if ready != nil {
		ready(ln.Addr().String())
	}

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("osfake shutting down", "grace", shutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	<-served // http.ErrServerClosed
	log.Info("osfake stopped")
	return nil
}

// checkAddr refuses a listen address that is not loopback unless
// allowRemote: an empty host (all interfaces), a non-loopback IP, or a host
// name other than localhost (which would need resolving to be judged).
func checkAddr(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-addr %q: %w", addr, err)
	}
	if allowRemote || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("-addr %q is not a loopback address; the emulator is test machinery (no authentication), pass -allow-remote to serve it anyway", addr)
}
