// Command benthos is Benthos v4.27.0 with only the components the peer
// benchmark's configuration uses (make bench-peer): the kafka_franz input
// and output, the opensearch output, the prometheus metrics and the pure
// processors (mapping, switch, fallback). It is its own module so that
// Benthos's dependencies never enter geoshard's go.mod.
//
// public/components/all is not imported: it pulls a module the Go module
// proxy refuses to serve.
package main

import (
	"context"

	"github.com/benthosdev/benthos/v4/public/service"

	_ "github.com/benthosdev/benthos/v4/public/components/io"
	_ "github.com/benthosdev/benthos/v4/public/components/kafka"
	_ "github.com/benthosdev/benthos/v4/public/components/opensearch"
	_ "github.com/benthosdev/benthos/v4/public/components/prometheus"
	_ "github.com/benthosdev/benthos/v4/public/components/pure"
)

func main() {
	service.RunCLI(context.Background())
}
