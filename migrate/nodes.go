package migrate

import (
	"context"
	"fmt"
	"net/http"

	"github.com/geoshard/geoshard/bulk"
)

// dataNodes asks the cluster how many data nodes it has.
func dataNodes(ctx context.Context, a *bulk.Admin) (int, error) {
	var out struct {
		DataNodes int `json:"number_of_data_nodes"`
	}
	if err := a.Send(ctx, bulk.Request{Method: http.MethodGet, Path: "/_cluster/health"}, &out); err != nil {
		return 0, fmt.Errorf("cluster health: %w", err)
	}
	return out.DataNodes, nil
}

// fittingReplicas is the replica count an index can have and still turn
// green on a cluster of n data nodes: OpenSearch never puts a replica on
// the node that holds its primary, so n nodes hold at most n-1 replicas.
// One replica where there is room, none on a single node.
func fittingReplicas(n int) int { return max(0, min(1, n-1)) }
