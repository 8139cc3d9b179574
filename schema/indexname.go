package schema

import (
	"fmt"
	"strings"
)

// CheckIndexName reports why OpenSearch would refuse name as an index
// name (invalid_index_name_exception), or nil: so that a name is refused
// before anything is recorded under it.
func CheckIndexName(name string) error {
	bad := func(why string) error { return fmt.Errorf("index name %q: %s", name, why) }
	switch {
	case name == "" || name == "." || name == "..":
		return bad("must not be empty, '.' or '..'")
	case strings.ToLower(name) != name:
		return bad("must be lowercase")
	case strings.ContainsAny(name, `\/*?"<>| ,#:`):
		return bad(`must not contain \ / * ? " < > | space , # or :`)
	case strings.HasPrefix(name, "_") || strings.HasPrefix(name, "-") || strings.HasPrefix(name, "+"):
		return bad("must not start with _, - or +")
	case len(name) > 255:
		return bad(fmt.Sprintf("is %d bytes; at most 255", len(name)))
	}
	return nil
}
