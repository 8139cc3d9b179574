package chaos

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The member-level faults: what one ingest instance suffers while the
// others run on. A process cannot be killed or frozen inside a test, so
// each is made of what the rest of the world would see of it:
//
//   - its OpenSearch traffic goes through a gate (gate): killed, every
//     request fails at once, as a connection to a dead host does; frozen,
//     every request waits at the gate until the thaw, as the requests of
//     a stopped process do; and an answer can be lost after the emulator
//     applied the request (lose);
//   - its group traffic is told apart at the broker by its member id,
//     which the in-process broker derives from the client id (each member
//     has its own), and a first JoinGroup, which carries no member id
//     yet, by its rebalance timeout (the broker's control sees no client
//     id; each member's is its own, a millisecond apart): killed, its heartbeats, commits and its leave are
//     answered by a closed connection, so that the group learns of the
//     death only when the session runs out, and nothing it commits after
//     the kill counts; frozen, those requests sleep until the thaw, so
//     the coordinator hears nothing from it and evicts it when the
//     session times out, while the member itself knows nothing of that
//     until it wakes.
//
// What the broker cannot tell apart is the member's fetches and its
// dead-letter and parking producers (their requests carry no member id).
// A killed member is therefore started with a drain timeout of a
// nanosecond, as pipeline's TestScaleOut kills one: it has no time to
// write anything more once it is cancelled.

// errKilled is what a killed member's requests fail with.
var errKilled = errors.New("chaos: member killed")

// gate is one member's transport to the emulator.
type gate struct {
	next http.RoundTripper

	mu     sync.Mutex
	dead   bool
	frozen chan struct{} // closed at the thaw; nil when not frozen
	lose   int           // bulk answers still to lose
	lost   int
}

func newGate() *gate {
	return &gate{next: http.DefaultTransport.(*http.Transport).Clone()}
}

// RoundTrip implements http.RoundTripper.
func (g *gate) RoundTrip(req *http.Request) (*http.Response, error) {
	g.mu.Lock()
	dead, frozen := g.dead, g.frozen
	g.mu.Unlock()
	if frozen != nil {
		select {
		case <-frozen:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
		g.mu.Lock()
		dead = g.dead
		g.mu.Unlock()
	}
	if dead {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errKilled
	}
	resp, err := g.next.RoundTrip(req)
	if err != nil || !strings.Contains(req.URL.Path, "_bulk") {
		return resp, err
	}
	g.mu.Lock()
	drop := g.lose > 0
	if drop {
		g.lose--
		g.lost++
	}
	g.mu.Unlock()
	if drop {
		// The emulator applied the batch; the member never learns how.
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, errors.New("chaos: bulk answer lost")
	}
	return resp, nil
}

func (g *gate) kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.dead = true
	if g.frozen != nil {
		close(g.frozen)
		g.frozen = nil
	}
}

func (g *gate) freeze() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.frozen == nil && !g.dead {
		g.frozen = make(chan struct{})
	}
}

func (g *gate) thaw() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.frozen != nil {
		close(g.frozen)
		g.frozen = nil
	}
}

func (g *gate) loseAnswers(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lose += n
}

// groupControl is the broker's side of the member faults: one control
// function, kept for the broker's life, that looks at every group request
// carrying a member id.
type groupControl struct {
	kf *kfake.Cluster

	mu sync.Mutex
	// joins names the member of a JoinGroup that carries no member id,
	// by its rebalance timeout in milliseconds (world.config).
	joins  map[int32]string
	dead   map[string]bool          // client id → killed
	frozen map[string]chan struct{} // client id → closed at the thaw
	// held and refused count the group requests held by a freeze and
	// refused after a kill, by client id and request key name.
	held, refused map[string]int
}

func newGroupControl(kf *kfake.Cluster) *groupControl {
	c := &groupControl{kf: kf, joins: map[int32]string{}, dead: map[string]bool{}, frozen: map[string]chan struct{}{}, held: map[string]int{}, refused: map[string]int{}}
	kf.Control(c.control)
	return c
}

// register tells the control which member's first JoinGroup carries
// rebalance as its rebalance timeout.
func (c *groupControl) register(clientID string, rebalance time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.joins[int32(rebalance.Milliseconds())] = clientID
}

// clientOf returns the client id of the member a group request comes
// from, if it is one of the registered members'. Called with mu held.
func (c *groupControl) clientOf(req kmsg.Request) string {
	if j, ok := req.(*kmsg.JoinGroupRequest); ok && j.MemberID == "" {
		return c.joins[j.RebalanceTimeoutMillis]
	}
	mid := memberOf(req)
	if mid == "" {
		return ""
	}
	for _, cid := range c.joins {
		if strings.HasPrefix(mid, cid+"-") {
			return cid
		}
	}
	return ""
}

// memberOf returns the member id a group request carries, if any.
func memberOf(req kmsg.Request) string {
	switch r := req.(type) {
	case *kmsg.HeartbeatRequest:
		return r.MemberID
	case *kmsg.OffsetCommitRequest:
		return r.MemberID
	case *kmsg.JoinGroupRequest:
		return r.MemberID
	case *kmsg.SyncGroupRequest:
		return r.MemberID
	case *kmsg.LeaveGroupRequest:
		if r.MemberID != "" {
			return r.MemberID
		}
		if len(r.Members) > 0 {
			return r.Members[0].MemberID
		}
	}
	return ""
}

// control runs on the broker for every request. kfake's member ids are
// the client id, a dash and a UUID (groups.go, generateMemberID).
func (c *groupControl) control(req kmsg.Request) (kmsg.Response, error, bool) {
	c.kf.KeepControl()
	c.mu.Lock()
	cid := c.clientOf(req)
	if cid == "" {
		c.mu.Unlock()
		return nil, nil, false
	}
	name := kmsg.NameForKey(req.Key())
	dead, frozen := c.dead[cid], c.frozen[cid]
	switch {
	case dead:
		c.refused[cid+" "+name]++
	case frozen != nil:
		c.held[cid+" "+name]++
	}
	c.mu.Unlock()
	if dead {
		return nil, errKilled, true
	}
	if frozen != nil {
		c.kf.SleepControl(func() { <-frozen })
	}
	return nil, nil, false
}

func (c *groupControl) kill(clientID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dead[clientID] = true
}

func (c *groupControl) freeze(clientID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen[clientID] == nil {
		c.frozen[clientID] = make(chan struct{})
	}
}

func (c *groupControl) thaw(clientID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch := c.frozen[clientID]; ch != nil {
		close(ch)
		delete(c.frozen, clientID)
	}
}

// thawAll ends every freeze, so that nothing sleeps in the broker when
// it closes.
func (c *groupControl) thawAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for cid, ch := range c.frozen {
		close(ch)
		delete(c.frozen, cid)
	}
}

// counts returns how many requests of the named kind from the client
// were held by a freeze and refused after a kill.
func (c *groupControl) counts(clientID, name string) (held, refused int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held[clientID+" "+name], c.refused[clientID+" "+name]
}
