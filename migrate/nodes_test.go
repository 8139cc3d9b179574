package migrate

import "testing"

func TestFittingReplicas(t *testing.T) {
	for _, tc := range []struct{ nodes, want int }{
		{0, 0}, // no data node answered: nothing to place replicas on
		{1, 0}, // one node: a replica can never be placed
		{2, 1},
		{3, 1},
		{12, 1},
	} {
		if got := fittingReplicas(tc.nodes); got != tc.want {
			t.Errorf("fittingReplicas(%d) = %d, want %d", tc.nodes, got, tc.want)
		}
	}
}
