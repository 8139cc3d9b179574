package pipeline

// The sources of the documents the pipeline writes: the event's doc with
// the fields the pipeline owns added (docs/architecture.md, "Index
// documents").

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/geoshard/geoshard/schema"
	"github.com/golang/geo/s2"
)

// restaurantBody builds a restaurant's source.
func restaurantBody(members []byte, id string, version int64, cell s2.CellID, lat, lon float64, level int) []byte {
	b := make([]byte, 0, len(members)+200)
	b = openBody(b, members)
	b = append(b, `"relation":"restaurant","geo_cell":"`...)
	b = append(b, cellAt(cell, level).ToToken()...)
	b = append(b, `","version":`...)
	b = strconv.AppendInt(b, version, 10)
	b = append(b, `,"doc_id":`...)
	b = appendString(b, schema.RestaurantID(id))
	b = append(b, `,"location":{"lat":`...)
	b = strconv.AppendFloat(b, lat, 'g', -1, 64)
	b = append(b, `,"lon":`...)
	b = strconv.AppendFloat(b, lon, 'g', -1, 64)
	return append(b, "}}"...)
}

// dishBody builds a dish's source.
func dishBody(members []byte, id, rid string, version int64, cell s2.CellID, level int) []byte {
	b := make([]byte, 0, len(members)+200)
	b = openBody(b, members)
	b = append(b, `"relation":{"name":"dish","parent":`...)
	b = appendString(b, schema.RestaurantID(rid))
	b = append(b, `},"geo_cell":"`...)
	b = append(b, cellAt(cell, level).ToToken()...)
	b = append(b, `","version":`...)
	b = strconv.AppendInt(b, version, 10)
	b = append(b, `,"doc_id":`...)
	b = appendString(b, schema.DishID(id))
	b = append(b, `,"restaurant_id":`...)
	b = appendString(b, rid)
	return append(b, '}')
}

func openBody(b, members []byte) []byte {
	b = append(b, '{')
	if len(members) > 0 {
		b = append(b, members...)
		b = append(b, ',')
	}
	return b
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// withGeoCell returns a stored source with its geo_cell replaced, for a
// dish that follows its restaurant to another cell.
func withGeoCell(src json.RawMessage, token string) ([]byte, error) {
	members, err := docMembers(src)
	if err != nil {
		return nil, err
	}
	// docMembers dropped every reserved field; put back the ones a stored
	// dish carries, read from the source itself.
	var own struct {
		Relation     json.RawMessage `json:"relation"`
		Version      json.RawMessage `json:"version"`
		DocID        json.RawMessage `json:"doc_id"`
		RestaurantID json.RawMessage `json:"restaurant_id"`
		Location     json.RawMessage `json:"location"`
	}
	if err := json.Unmarshal(src, &own); err != nil {
		return nil, err
	}
	b := openBody(make([]byte, 0, len(src)+32), members)
	add := func(k string, v json.RawMessage) {
		if len(v) > 0 {
			b = append(b, '"')
			b = append(b, k...)
			b = append(b, `":`...)
			b = append(b, v...)
			b = append(b, ',')
		}
	}
	add(schema.FieldRelation, own.Relation)
	add(schema.FieldVersion, own.Version)
	add(schema.FieldDocID, own.DocID)
	add(schema.FieldRestaurantID, own.RestaurantID)
	add(schema.FieldLocation, own.Location)
	b = append(b, `"geo_cell":"`...)
	b = append(b, token...)
	return append(b, `"}`...), nil
}
