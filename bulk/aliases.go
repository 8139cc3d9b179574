package bulk

import (
	"context"
	"fmt"
	"net/http"
	"sort"
)

// AliasTarget is one index an alias points to.
type AliasTarget struct {
	Index        string
	IsWriteIndex *bool
}

// Alias returns the indices an alias points to, by index name.
func (a *Admin) Alias(ctx context.Context, alias string) ([]AliasTarget, error) {
	var out map[string]struct {
		Aliases map[string]struct {
			IsWriteIndex *bool `json:"is_write_index"`
		} `json:"aliases"`
	}
	if err := a.Send(ctx, Request{Method: http.MethodGet, Path: "/_alias/" + esc(alias)}, &out); err != nil {
		return nil, err
	}
	var ts []AliasTarget
	for idx, v := range out {
		if meta, ok := v.Aliases[alias]; ok {
			ts = append(ts, AliasTarget{Index: idx, IsWriteIndex: meta.IsWriteIndex})
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Index < ts[j].Index })
	return ts, nil
}

// WriteIndex resolves an alias to its write index, by the server's rule:
// the index flagged is_write_index, or the only index when none is
// flagged. A concrete index name resolves to itself.
func (a *Admin) WriteIndex(ctx context.Context, name string) (string, error) {
	ts, err := a.Alias(ctx, name)
	if IsNotFound(err) {
		if ok, err := a.IndexExists(ctx, name); err != nil || !ok {
			return "", fmt.Errorf("bulk: %q is neither an alias nor an index", name)
		}
		return name, nil
	}
	if err != nil {
		return "", err
	}
	var flagged []string
	for _, t := range ts {
		if t.IsWriteIndex != nil && *t.IsWriteIndex {
			flagged = append(flagged, t.Index)
		}
	}
	switch {
	case len(flagged) == 1:
		return flagged[0], nil
	case len(flagged) == 0 && len(ts) == 1 && ts[0].IsWriteIndex == nil:
		return ts[0].Index, nil
	}
	return "", fmt.Errorf("bulk: alias %q has no single write index (it points to %d indices)", name, len(ts))
}

// AliasAction is one action of an atomic _aliases request.
type AliasAction struct {
	Add         *AliasSpec `json:"add,omitempty"`
	Remove      *AliasSpec `json:"remove,omitempty"`
	RemoveIndex *AliasSpec `json:"remove_index,omitempty"`
}

// AliasSpec names an index and an alias, with the options of an add.
type AliasSpec struct {
	Index        string `json:"index"`
	Alias        string `json:"alias,omitempty"`
	IsWriteIndex *bool  `json:"is_write_index,omitempty"`
	MustExist    *bool  `json:"must_exist,omitempty"`
}

// UpdateAliasesRequest is the one atomic _aliases call for actions: the
// server applies all of them or none.
func UpdateAliasesRequest(actions []AliasAction) (Request, error) {
	b, err := jsonBody(map[string]any{"actions": actions})
	if err != nil {
		return Request{}, fmt.Errorf("bulk: alias actions: %w", err)
	}
	return Request{Method: http.MethodPost, Path: "/_aliases", Body: b}, nil
}

// UpdateAliases sends UpdateAliasesRequest.
func (a *Admin) UpdateAliases(ctx context.Context, actions []AliasAction) error {
	r, err := UpdateAliasesRequest(actions)
	if err != nil {
		return err
	}
	return a.Send(ctx, r, nil)
}
