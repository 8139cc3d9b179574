package eventmodel

import (
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

func TestState(t *testing.T) {
	data, err := os.ReadFile("../../testdata/maps/us-18.json")
	if err != nil {
		t.Fatal(err)
	}
	mp, err := router.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	const sfLat, sfLon, nyLat, nyLon = 37.7749, -122.4194, 40.7128, -74.006
	tests := []struct {
		name  string
		apply func(s *State)
		want  []string // the expected _ids
		check func(t *testing.T, docs map[string]Doc)
	}{
		{"a restaurant and its dish", func(s *State) {
			s.UpsertRestaurant("r1", 1, sfLat, sfLon, map[string]any{"name": "a", "version": 99})
			s.ApplyDish("d1", "r1", 1, true, map[string]any{"name": "b", "restaurant_id": "elsewhere"})
		}, []string{"dish:d1", "restaurant:r1"}, func(t *testing.T, docs map[string]Doc) {
			r, d := docs["restaurant:r1"], docs["dish:d1"]
			if d.Shard != r.Shard || d.Routing != r.Routing || r.Routing == "" {
				t.Errorf("dish on shard %d (%q), restaurant on %d (%q): want both on the restaurant's", d.Shard, d.Routing, r.Shard, r.Routing)
			}
			if r.Source[schema.FieldVersion] != 1.0 || d.Source[schema.FieldRestaurantID] != "r1" {
				t.Errorf("sources %v, %v: the pipeline's fields must override the doc's", r.Source, d.Source)
			}
			want := map[string]any{"name": schema.RelationDish, "parent": "restaurant:r1"}
			if !reflect.DeepEqual(d.Source[schema.FieldRelation], want) {
				t.Errorf("dish relation = %v, want %v", d.Source[schema.FieldRelation], want)
			}
		}},
		{"an older version changes nothing", func(s *State) {
			s.UpsertRestaurant("r1", 2, sfLat, sfLon, nil)
			if s.UpsertRestaurant("r1", 1, nyLat, nyLon, nil) {
				t.Error("UpsertRestaurant(v1) after v2 = true, want false")
			}
		}, []string{"restaurant:r1"}, func(t *testing.T, docs map[string]Doc) {
			if loc := docs["restaurant:r1"].Source[schema.FieldLocation].(map[string]any); loc["lat"] != sfLat {
				t.Errorf("location = %v, want v2's", loc)
			}
		}},
		{"a restaurant delete removes its dishes", func(s *State) {
			s.UpsertRestaurant("r1", 1, sfLat, sfLon, nil)
			s.ApplyDish("d1", "r1", 1, true, nil)
			s.UpsertRestaurant("r2", 1, nyLat, nyLon, nil)
			s.ApplyDish("d2", "r2", 1, true, nil)
			s.DeleteRestaurant("r1", 2)
		}, []string{"dish:d2", "restaurant:r2"}, nil},
		{"a delete keeps its version", func(s *State) {
			s.UpsertRestaurant("r1", 1, sfLat, sfLon, nil)
			s.ApplyDish("d1", "r1", 3, false, nil)
			s.ApplyDish("d1", "r1", 2, true, nil)
		}, []string{"restaurant:r1"}, nil},
		{"a dish lives where its restaurant finally is", func(s *State) {
			s.UpsertRestaurant("r1", 1, sfLat, sfLon, nil)
			s.ApplyDish("d1", "r1", 1, true, nil)
			s.UpsertRestaurant("r1", 2, nyLat, nyLon, nil)
		}, []string{"dish:d1", "restaurant:r1"}, func(t *testing.T, docs map[string]Doc) {
			ny, err := mp.Locate(nyLat, nyLon)
			if err != nil {
				t.Fatal(err)
			}
			if docs["dish:d1"].Shard != ny {
				t.Errorf("dish on shard %d, want %d (New York's)", docs["dish:d1"].Shard, ny)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewState()
			tt.apply(s)
			docs := s.Expected(mp)
			var ids []string
			for id := range docs {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			if !slices.Equal(ids, tt.want) {
				t.Fatalf("Expected ids = %v, want %v", ids, tt.want)
			}
			if tt.check != nil {
				tt.check(t, docs)
			}
		})
	}
}
