package bulk

import (
	"context"
	"testing"

	"github.com/geoshard/geoshard/internal/realenv"
)

func TestAliases(t *testing.T) {
	realenv.Parallel(t)
	e := newAdminEnv(t)
	a := e.a
	ctx := context.Background()
	v1, alias := e.menu(t)
	nothing := e.index(t, "nothing")
	yes := true
	if ts, err := a.Alias(ctx, alias); err != nil || len(ts) != 1 || ts[0].Index != v1 || ts[0].IsWriteIndex == nil || !*ts[0].IsWriteIndex {
		t.Errorf("Alias(%s) = %+v, %v", alias, ts, err)
	}
	if w, err := a.WriteIndex(ctx, alias); w != v1 || err != nil {
		t.Errorf("WriteIndex(%s) = %q, %v", alias, w, err)
	}
	if w, err := a.WriteIndex(ctx, v1); w != v1 || err != nil {
		t.Errorf("WriteIndex(%s) = %q, %v", v1, w, err)
	}
	if _, err := a.WriteIndex(ctx, nothing); err == nil {
		t.Errorf("WriteIndex(%s) succeeded", nothing)
	}

	// The swap a cutover makes: one request, both actions.
	v2 := e.index(t, "menu-v2")
	if err := a.CreateIndex(ctx, v2, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	swap, err := UpdateAliasesRequest([]AliasAction{
		{Remove: &AliasSpec{Index: v1, Alias: alias, MustExist: &yes}},
		{Add: &AliasSpec{Index: v2, Alias: alias, IsWriteIndex: &yes}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Send(ctx, swap, nil); err != nil {
		t.Fatal(err)
	}
	if w, err := a.WriteIndex(ctx, alias); w != v2 || err != nil {
		t.Errorf("WriteIndex(%s) after the swap = %q, %v, want %s", alias, w, err, v2)
	}
}
