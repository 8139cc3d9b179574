// Package serve runs the small HTTP server of geoshard's commands: the
// Prometheus registry at /metrics plus any extra handlers (health and
// readiness for ingest), stopped with a deadline.
//
// # Boundaries
//
// serve knows HTTP and Prometheus, and nothing of what the commands do:
// it imports no other package of geoshard.
//
//	imports: none
//	never:   none
package serve
