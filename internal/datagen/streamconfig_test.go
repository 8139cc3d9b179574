package datagen

import "testing"

func TestSizeFor(t *testing.T) {
	for _, tc := range []struct{ events, want int }{
		{0, 1},
		{1, 1},
		{40_000, 3174},
		{100_000_000, MaxStreamRestaurants},
	} {
		var c StreamConfig
		c.SizeFor(tc.events)
		if c.Restaurants != tc.want {
			t.Errorf("SizeFor(%d): Restaurants = %d, want %d", tc.events, c.Restaurants, tc.want)
		}
	}
}
