package migrate

import "testing"

func TestFittingReplicas(t *testing.T) {
	for _, tc := range []struct {
		name        string
		nodes, want int
	}{
		{"no data node", 0, 0}, // none answered: nothing to place replicas on
		{"one node", 1, 0},     // a replica can never be placed
		{"two nodes", 2, 1},
		{"three nodes", 3, 1},
		{"twelve nodes", 12, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fittingReplicas(tc.nodes); got != tc.want {
				t.Errorf("fittingReplicas(%d) = %d, want %d", tc.nodes, got, tc.want)
			}
		})
	}
}
