// examples/clients/go/pq: the cookbook's worker on database/sql with lib/pq.
//
//	A2_URL=postgres://...  A2_LISTEN_URL=postgres://...  A2_PGBOUNCER=0|1  A2_RESTART='...'  ./pq
//
// A2_URL is where the app's queries go (the server, or pgbouncer in
// transaction mode), A2_LISTEN_URL a direct connection for LISTEN,
// A2_RESTART a shell command that restarts the server (the test's stand-in
// for one).  Prints the transcript in ../../expected.txt.  Debian 12:
// golang-go (1.19), golang-github-lib-pq-dev.  Built and run by
// test/suites/86-cookbook.sh direct and through pgbouncer; docs/clients.md
// quotes the parts between [name] and [/name] markers.
package main

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/lib/pq"
)

// StoredEvent holds the fields of a2's StoredEvent this program uses.
type StoredEvent struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	Index        int64           `json:"index"`
	SessionID    string          `json:"sessionId"`
	Payload      json.RawMessage `json:"payload"`
	AttemptCount int             `json:"attemptCount"`
	ProcessedAt  *string         `json:"processedAt"`
}

type AppendResult struct {
	Events     []StoredEvent `json:"events"`
	HasPending bool          `json:"hasPending"`
}

type ClaimResult struct {
	Outcome string        `json:"outcome"` // claimed, busy or settled
	Events  []StoredEvent `json:"events"`
	RetryAt *string       `json:"retryAt"`
}

type CompleteResult struct {
	Outcome string        `json:"outcome"` // completed or superseded
	Events  []StoredEvent `json:"events"`
}

type Order struct {
	Items []struct {
		SKU string `json:"sku"`
		Qty int    `json:"qty"`
	} `json:"items"`
	Note string `json:"note,omitempty"`
}

type querier interface {
	QueryRow(query string, args ...any) *sql.Row
}

// [connect]
// Through pgbouncer in transaction mode: binary_parameters=yes.  lib/pq
// otherwise prepares each statement in one round trip and runs it in
// another, and pgbouncer may run the second on a server connection that
// lacks the statement.
func connect(url string, behindPgbouncer bool) (*sql.DB, error) {
	if behindPgbouncer {
		url += map[bool]string{true: "&", false: "?"}[strings.Contains(url, "?")] + "binary_parameters=yes"
	}
	db, err := sql.Open("postgres", url)
	if err == nil {
		db.SetMaxOpenConns(8)
	}
	return db, err
}

// [/connect]

// [json]
// jsonb arguments: json.Marshal and pass a string, with ::jsonb in the
// SQL (a []byte would go as bytea, or in binary with binary_parameters).
// jsonb results arrive as []byte: scan, then json.Unmarshal.
func call(q querier, result any, query string, args ...any) error {
	var raw []byte
	if err := q.QueryRow(query, args...).Scan(&raw); err != nil {
		return err
	}
	return json.Unmarshal(raw, result)
}

func jsonArg(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func appendEvents(q querier, sessionID string, events any) (r AppendResult, err error) {
	err = call(q, &r, "SELECT a2_append($1, $2::jsonb)", sessionID, jsonArg(events))
	return
}

func read(q querier, sessionID string, afterIndex int64) (r []StoredEvent, err error) {
	err = call(q, &r, "SELECT a2_read($1, $2)", sessionID, afterIndex)
	return
}

// [/json]

// [transaction]
// The handler's writes and a2_complete in one transaction: both commit or
// neither does.  Rollback after Commit does nothing.
func ship(db *sql.DB, sessionID string, ev StoredEvent, children any, fail bool) (r CompleteResult, err error) {
	tx, err := db.Begin()
	if err != nil {
		return r, err
	}
	defer tx.Rollback()
	var order Order
	if err = json.Unmarshal(ev.Payload, &order); err != nil {
		return r, err
	}
	for _, item := range order.Items {
		if _, err = tx.Exec("INSERT INTO shipments (order_id, sku, qty) VALUES ($1, $2, $3)",
			sessionID, item.SKU, item.Qty); err != nil {
			return r, err
		}
	}
	if err = call(tx, &r, "SELECT a2_complete($1, $2, $3, $4::jsonb)",
		sessionID, ev.Index, ev.AttemptCount, jsonArg(children)); err != nil {
		return r, err
	}
	if fail {
		return r, errHandler // something after the completion failed: all of it rolls back
	}
	return r, tx.Commit()
}

// [/transaction]

var errHandler = errors.New("handler failed")

// [errors]
// *pq.Error carries the SQLSTATE.
func sqlstate(err error) string {
	var pqErr *pq.Error
	if errors.As(err, &pqErr) {
		return string(pqErr.Code)
	}
	return ""
}

// [/errors]

// [retry]
// After a restart, database/sql replaces a connection lib/pq reports bad,
// but a statement can still fail once on one the server closed (57P01, or
// an I/O error).  a2 calls are safe to repeat: an append with ids replays,
// a completion of the same attempt returns the stored children.
func connectionLost(err error) bool {
	var pqErr *pq.Error
	if errors.As(err, &pqErr) {
		class := string(pqErr.Code)
		return strings.HasPrefix(class, "08") || strings.HasPrefix(class, "57P0")
	}
	return err != nil && !errors.Is(err, sql.ErrNoRows)
}

func retrying[T any](call func() (T, error)) (T, error) {
	for i := 1; ; i++ {
		r, err := call()
		if err == nil || i >= 120 || !connectionLost(err) {
			return r, err
		}
		fmt.Fprintf(os.Stderr, "retrying after: %v\n", err)
		time.Sleep(250 * time.Millisecond)
	}
}

// [/retry]

// [follow]
// pq.Listener holds a direct connection of its own (through pgbouncer in
// transaction mode the LISTEN would stay on a server connection other
// clients then use), reconnects by itself and LISTENs again; it then sends
// a nil notification: read what was missed.
type Follower struct {
	mu       sync.Mutex
	cond     *sync.Cond
	lastSeen map[string]int64
	listens  int
}

func follow(listenURL string, db *sql.DB, sessionIDs []string) (*Follower, error) {
	f := &Follower{lastSeen: map[string]int64{}}
	f.cond = sync.NewCond(&f.mu)
	for _, s := range sessionIDs {
		f.lastSeen[s] = 0
	}
	listener := pq.NewListener(listenURL, 100*time.Millisecond, 2*time.Second,
		func(ev pq.ListenerEventType, err error) {
			if ev == pq.ListenerEventConnected || ev == pq.ListenerEventReconnected {
				f.mu.Lock()
				f.listens++
				f.mu.Unlock()
			}
		})
	if err := listener.Listen("a2_events"); err != nil {
		return nil, err
	}
	catchUp := func(sessionID string) {
		f.mu.Lock()
		after := f.lastSeen[sessionID]
		f.mu.Unlock()
		events, err := retrying(func() ([]StoredEvent, error) { return read(db, sessionID, after) })
		if err != nil {
			fmt.Fprintf(os.Stderr, "catch-up of %s: %v\n", sessionID, err)
			return
		}
		f.mu.Lock()
		if len(events) > 0 {
			f.lastSeen[sessionID] = events[len(events)-1].Index
		}
		f.cond.Broadcast()
		f.mu.Unlock()
	}
	go func() {
		for _, s := range sessionIDs {
			catchUp(s)
		}
		for n := range listener.Notify {
			if n == nil { // reconnected: LISTEN is back, events may have been missed
				for _, s := range sessionIDs {
					catchUp(s)
				}
				continue
			}
			var p struct {
				SessionID string `json:"sessionId"`
				Index     int64  `json:"index"`
			}
			if json.Unmarshal([]byte(n.Extra), &p) != nil {
				continue
			}
			f.mu.Lock()
			seen, known := f.lastSeen[p.SessionID]
			f.mu.Unlock()
			if known && p.Index > seen {
				catchUp(p.SessionID)
			}
		}
	}()
	return f, nil
}

// [/follow]

// wait blocks until cond holds (harness).
func (f *Follower) wait(cond func() bool) {
	done := make(chan struct{})
	go func() {
		f.mu.Lock()
		for !cond() {
			f.cond.Wait()
		}
		f.mu.Unlock()
		close(done)
	}()
	ticker := time.NewTicker(100 * time.Millisecond) // listens changes without a broadcast
	defer ticker.Stop()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case <-done:
			return
		case <-ticker.C:
			f.cond.Broadcast()
		case <-deadline:
			fail("the follower did not get there")
		}
	}
}

func fail(what string) {
	fmt.Fprintln(os.Stderr, "check failed:", what)
	os.Exit(1)
}

func must[T any](v T, err error) T {
	if err != nil {
		fail(err.Error())
	}
	return v
}

func check(ok bool, what string) {
	if !ok {
		fail(what)
	}
}

func main() {
	db := must(connect(os.Getenv("A2_URL"), os.Getenv("A2_PGBOUNCER") == "1"))
	count := func(pattern string) (n int64) {
		check(db.QueryRow("SELECT count(*) FROM shipments WHERE order_id LIKE $1", pattern).Scan(&n) == nil, "count")
		return
	}
	claim := func(sessionID, holder string, ttlMs int64) (r ClaimResult) {
		check(call(db, &r, "SELECT a2_claim($1, $2, $3)", sessionID, holder, ttlMs) == nil, "claim")
		return
	}
	complete := func(sessionID string, index int64, attempt int) (r CompleteResult) {
		check(call(db, &r, "SELECT a2_complete($1, $2, $3)", sessionID, index, attempt) == nil, "complete")
		return
	}
	settled := func(id, typ string) any {
		return []map[string]any{{"id": id, "type": typ, "settled": true}}
	}

	// 1. JSON in and out.
	payload := map[string]any{
		"items": []map[string]any{{"sku": "tea", "qty": 2}, {"sku": "cups", "qty": 6}},
		"note":  "thé ☕ — 東京",
	}
	appended := must(appendEvents(db, "order-1", []map[string]any{{
		"id": "order-1/placed", "type": "order.placed", "lane": "payments", "payload": payload}}))
	fmt.Printf("append: order-1 index %d, hasPending %t\n", appended.Events[0].Index, appended.HasPending)
	stored := must(read(db, "order-1", 0))[0]
	var back, sent any
	check(json.Unmarshal(stored.Payload, &back) == nil && json.Unmarshal([]byte(jsonArg(payload)), &sent) == nil &&
		reflect.DeepEqual(back, sent), "payload round trip")
	var order Order
	check(json.Unmarshal(stored.Payload, &order) == nil, "payload")
	fmt.Printf("read: payload round trip, note %q, %d items\n", order.Note, len(order.Items))

	// 2. Errors carry their SQLSTATE.
	_, err := appendEvents(db, "order-1", map[string]any{"not": "an array"})
	var pqErr *pq.Error
	check(errors.As(err, &pqErr), "an error")
	fmt.Printf("error: %s %s\n", sqlstate(err), pqErr.Message)

	// 3. Claim, then complete inside the app's transaction.
	c := claim("order-1", "worker-1", 30000)
	ev := c.Events[0]
	fmt.Printf("claim: %s [%d] attempt %d\n", c.Outcome, ev.Index, ev.AttemptCount)
	paid := []map[string]any{{"id": "order-1/paid", "type": "payment.captured", "payload": map[string]any{"amount": 7.5}}}
	_, err = ship(db, "order-1", ev, paid, true)
	check(errors.Is(err, errHandler), "handler failure")
	unprocessed := must(read(db, "order-1", 0))[0].ProcessedAt == nil
	fmt.Printf("rollback: shipments %d, event 1 %s\n", count("order-1"),
		map[bool]string{true: "unprocessed", false: "processed"}[unprocessed])
	done := must(ship(db, "order-1", ev, paid, false))
	fmt.Printf("complete: %s, child index %d, shipments %d\n", done.Outcome, done.Events[0].Index, count("order-1"))

	// 4. Stale work, both ways.
	claim("order-1", "worker-1", 0)
	check(claim("order-1", "worker-2", 30000).Events[0].AttemptCount == 2, "second attempt")
	late := complete("order-1", 2, 1)
	_, err = appendEvents(db, "order-1", []map[string]any{{"type": "refund.requested",
		"cause": map[string]any{"index": 2, "attempt": 1}}})
	check(sqlstate(err) == "Z2002", "Z2002")
	fmt.Printf("stale: complete %s, caused append %s\n", late.Outcome, sqlstate(err))
	check(complete("order-1", 2, 2).Outcome == "completed", "complete attempt 2")

	// 5. LISTEN and catch up.
	f := must(follow(os.Getenv("A2_LISTEN_URL"), db, []string{"order-1"}))
	f.wait(func() bool { return f.lastSeen["order-1"] >= 2 })
	must(appendEvents(db, "order-1", settled("order-1/packed", "order.packed")))
	f.wait(func() bool { return f.lastSeen["order-1"] >= 3 })
	fmt.Printf("listen: caught up to 2, heard %d\n", f.lastSeen["order-1"])

	// 6. A server restart.
	restart := exec.Command("sh", "-c", os.Getenv("A2_RESTART"))
	restart.Stdout, restart.Stderr = os.Stderr, os.Stderr
	check(restart.Run() == nil, "restart")
	shipped := must(retrying(func() (AppendResult, error) {
		return appendEvents(db, "order-1", settled("order-1/shipped", "order.shipped"))
	}))
	f.wait(func() bool { return f.lastSeen["order-1"] >= 4 })
	fmt.Printf("restart: appended %d, listener caught up to %d\n", shipped.Events[0].Index, f.lastSeen["order-1"])
	f.wait(func() bool { return f.listens >= 2 })
	must(retrying(func() (AppendResult, error) {
		return appendEvents(db, "order-1", settled("order-1/delivered", "order.delivered"))
	}))
	f.wait(func() bool { return f.lastSeen["order-1"] >= 5 })
	fmt.Printf("restart: listener heard %d\n", f.lastSeen["order-1"])

	// 7. A burst: 8 goroutines at once, 5 orders each.
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				sessionID := fmt.Sprintf("burst-%d-%d", w, i)
				must(appendEvents(db, sessionID, []map[string]any{{"id": sessionID + "/placed", "type": "order.placed",
					"payload": map[string]any{"items": []map[string]any{{"sku": "tea", "qty": 1}}}}}))
				c := claim(sessionID, fmt.Sprintf("worker-%d", w), 30000)
				check(must(ship(db, sessionID, c.Events[0], []any{}, false)).Outcome == "completed", sessionID)
			}
		}(w)
	}
	wg.Wait()
	fmt.Printf("burst: %d orders shipped by 8 workers\n", count("burst-%"))
	db.Close()
	fmt.Println("done")
}
