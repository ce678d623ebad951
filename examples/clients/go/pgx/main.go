// examples/clients/go/pgx: the cookbook's worker on pgx v4 with pgxpool.
//
//	A2_URL=postgres://...  A2_LISTEN_URL=postgres://...  A2_PGBOUNCER=0|1  A2_RESTART='...'  ./pgx
//
// Same transcript as ../pq (../../expected.txt).  Debian 12: golang-go
// (1.19), golang-github-jackc-pgx-v4-dev.  Built and run by
// test/suites/86-cookbook.sh direct and through pgbouncer; docs/clients.md
// quotes the parts between [name] and [/name] markers.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
)

// StoredEvent holds the fields of a2's StoredEvent this program uses.
type StoredEvent struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	Index        int64           `json:"index"`
	SessionID    string          `json:"sessionId"`
	Payload      json.RawMessage `json:"payload"`
	AttemptCount int32           `json:"attemptCount"`
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
		Qty int32  `json:"qty"`
	} `json:"items"`
	Note string `json:"note,omitempty"`
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

var ctx = context.Background()

// [connect]
// Through pgbouncer in transaction mode: statement_cache_mode=describe.
// pgx otherwise prepares every statement under a name on the server
// connection it happens to use, and the next one lacks it.
func connect(url string, behindPgbouncer bool) (*pgxpool.Pool, error) {
	if behindPgbouncer {
		url += sep(url) + "statement_cache_mode=describe"
	}
	config, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	config.MaxConns = 8
	return pgxpool.ConnectConfig(ctx, config)
}

func sep(url string) string {
	if strings.Contains(url, "?") {
		return "&"
	}
	return "?"
}

// [/connect]

// [json]
// jsonb arguments: pass Go values (maps, slices, structs); pgx knows the
// parameter is jsonb and marshals them.  jsonb results scan straight into
// a struct (pgx unmarshals them).
func appendEvents(q querier, sessionID string, events any) (r AppendResult, err error) {
	err = q.QueryRow(ctx, "SELECT a2_append($1, $2)", sessionID, events).Scan(&r)
	return
}

func read(q querier, sessionID string, afterIndex int64) (r []StoredEvent, err error) {
	err = q.QueryRow(ctx, "SELECT a2_read($1, $2)", sessionID, afterIndex).Scan(&r)
	return
}

// [/json]

// [transaction]
// BeginFunc commits when the function returns nil and rolls back when it
// returns an error: the handler's writes and a2_complete commit together
// or not at all.
func ship(tx pgx.Tx, sessionID string, ev StoredEvent, children any) (r CompleteResult, err error) {
	var order Order
	if err = json.Unmarshal(ev.Payload, &order); err != nil {
		return r, err
	}
	for _, item := range order.Items {
		if _, err = tx.Exec(ctx, "INSERT INTO shipments (order_id, sku, qty) VALUES ($1, $2, $3)",
			sessionID, item.SKU, item.Qty); err != nil {
			return r, err
		}
	}
	err = tx.QueryRow(ctx, "SELECT a2_complete($1, $2, $3, $4)",
		sessionID, ev.Index, ev.AttemptCount, children).Scan(&r)
	return r, err
}

// usage: err := pool.BeginFunc(ctx, func(tx pgx.Tx) (err error) { r, err = ship(tx, ...); return })

// [/transaction]

var errHandler = errors.New("handler failed")

// [errors]
// *pgconn.PgError carries the SQLSTATE.
func sqlstate(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// [/errors]

// [retry]
// After a restart a statement on a connection the server closed fails
// once (57P01, or an I/O error); pgxpool then drops that connection.  a2
// calls are safe to repeat: an append with ids replays, a completion of
// the same attempt returns the stored children.
func connectionLost(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P0")
	}
	return err != nil && !errors.Is(err, pgx.ErrNoRows)
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
// LISTEN on a direct connection of its own (through pgbouncer in
// transaction mode the LISTEN would stay on a server connection other
// clients then use).  pgx does not reconnect it: after every (re)connect,
// LISTEN, then read what was missed.  Notifications that arrive during a
// catch-up read on the same connection are kept for WaitForNotification.
type Follower struct {
	mu       sync.Mutex
	cond     *sync.Cond
	lastSeen map[string]int64
	listens  int
}

func follow(listenURL string, sessionIDs []string) *Follower {
	f := &Follower{lastSeen: map[string]int64{}}
	f.cond = sync.NewCond(&f.mu)
	for _, s := range sessionIDs {
		f.lastSeen[s] = 0
	}
	catchUp := func(conn *pgx.Conn, sessionID string) error {
		f.mu.Lock()
		after := f.lastSeen[sessionID]
		f.mu.Unlock()
		events, err := read(conn, sessionID, after)
		if err != nil {
			return err
		}
		f.mu.Lock()
		if len(events) > 0 {
			f.lastSeen[sessionID] = events[len(events)-1].Index
		}
		f.cond.Broadcast()
		f.mu.Unlock()
		return nil
	}
	listen := func() error {
		conn, err := pgx.Connect(ctx, listenURL)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		if _, err = conn.Exec(ctx, "LISTEN a2_events"); err != nil {
			return err
		}
		for _, s := range sessionIDs {
			if err = catchUp(conn, s); err != nil {
				return err
			}
		}
		f.mu.Lock()
		f.listens++
		f.cond.Broadcast()
		f.mu.Unlock()
		for {
			n, err := conn.WaitForNotification(ctx) // an error once the connection is lost
			if err != nil {
				return err
			}
			var p struct {
				SessionID string `json:"sessionId"`
				Index     int64  `json:"index"`
			}
			if json.Unmarshal([]byte(n.Payload), &p) != nil {
				continue
			}
			f.mu.Lock()
			seen, known := f.lastSeen[p.SessionID]
			f.mu.Unlock()
			if known && p.Index > seen {
				if err = catchUp(conn, p.SessionID); err != nil {
					return err
				}
			}
		}
	}
	go func() {
		delay := 100 * time.Millisecond
		for {
			if err := listen(); err != nil {
				time.Sleep(delay)
				if delay *= 2; delay > 2*time.Second {
					delay = 2 * time.Second
				}
			}
		}
	}()
	return f
}

// [/follow]

// wait blocks until cond holds (harness).
func (f *Follower) wait(cond func() bool) {
	deadline := time.Now().Add(15 * time.Second)
	f.mu.Lock()
	defer f.mu.Unlock()
	for !cond() {
		if time.Now().After(deadline) {
			fail("the follower did not get there")
		}
		f.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		f.mu.Lock()
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
	pool := must(connect(os.Getenv("A2_URL"), os.Getenv("A2_PGBOUNCER") == "1"))
	count := func(pattern string) (n int64) {
		check(pool.QueryRow(ctx, "SELECT count(*) FROM shipments WHERE order_id LIKE $1", pattern).Scan(&n) == nil, "count")
		return
	}
	claim := func(sessionID, holder string, ttlMs int64) (r ClaimResult) {
		check(pool.QueryRow(ctx, "SELECT a2_claim($1, $2, $3)", sessionID, holder, ttlMs).Scan(&r) == nil, "claim")
		return
	}
	complete := func(sessionID string, index int64, attempt int32) (r CompleteResult) {
		check(pool.QueryRow(ctx, "SELECT a2_complete($1, $2, $3)", sessionID, index, attempt).Scan(&r) == nil, "complete")
		return
	}
	settled := func(id, typ string) any {
		return []map[string]any{{"id": id, "type": typ, "settled": true}}
	}
	shipInTransaction := func(sessionID string, ev StoredEvent, children any) (r CompleteResult, err error) {
		err = pool.BeginFunc(ctx, func(tx pgx.Tx) (err error) {
			r, err = ship(tx, sessionID, ev, children)
			return
		})
		return
	}

	// 1. JSON in and out.
	payload := map[string]any{
		"items": []map[string]any{{"sku": "tea", "qty": 2}, {"sku": "cups", "qty": 6}},
		"note":  "thé ☕ — 東京",
	}
	appended := must(appendEvents(pool, "order-1", []map[string]any{{
		"id": "order-1/placed", "type": "order.placed", "lane": "payments", "payload": payload}}))
	fmt.Printf("append: order-1 index %d, hasPending %t\n", appended.Events[0].Index, appended.HasPending)
	stored := must(read(pool, "order-1", 0))[0]
	var back, sent any
	sentJSON, _ := json.Marshal(payload)
	check(json.Unmarshal(stored.Payload, &back) == nil && json.Unmarshal(sentJSON, &sent) == nil &&
		reflect.DeepEqual(back, sent), "payload round trip")
	var order Order
	check(json.Unmarshal(stored.Payload, &order) == nil, "payload")
	fmt.Printf("read: payload round trip, note %q, %d items\n", order.Note, len(order.Items))

	// 2. Errors carry their SQLSTATE.
	_, err := appendEvents(pool, "order-1", map[string]any{"not": "an array"})
	var pgErr *pgconn.PgError
	check(errors.As(err, &pgErr), "an error")
	fmt.Printf("error: %s %s\n", sqlstate(err), pgErr.Message)

	// 3. Claim, then complete inside the app's transaction.
	c := claim("order-1", "worker-1", 30000)
	ev := c.Events[0]
	fmt.Printf("claim: %s [%d] attempt %d\n", c.Outcome, ev.Index, ev.AttemptCount)
	paid := []map[string]any{{"id": "order-1/paid", "type": "payment.captured", "payload": map[string]any{"amount": 7.5}}}
	err = pool.BeginFunc(ctx, func(tx pgx.Tx) error {
		if _, err := ship(tx, "order-1", ev, paid); err != nil {
			return err
		}
		return errHandler // something after the completion failed: all of it rolls back
	})
	check(errors.Is(err, errHandler), "handler failure")
	unprocessed := must(read(pool, "order-1", 0))[0].ProcessedAt == nil
	fmt.Printf("rollback: shipments %d, event 1 %s\n", count("order-1"),
		map[bool]string{true: "unprocessed", false: "processed"}[unprocessed])
	done := must(shipInTransaction("order-1", ev, paid))
	fmt.Printf("complete: %s, child index %d, shipments %d\n", done.Outcome, done.Events[0].Index, count("order-1"))

	// 4. Stale work, both ways.
	claim("order-1", "worker-1", 0)
	check(claim("order-1", "worker-2", 30000).Events[0].AttemptCount == 2, "second attempt")
	late := complete("order-1", 2, 1)
	_, err = appendEvents(pool, "order-1", []map[string]any{{"type": "refund.requested",
		"cause": map[string]any{"index": 2, "attempt": 1}}})
	check(sqlstate(err) == "Z2002", "Z2002")
	fmt.Printf("stale: complete %s, caused append %s\n", late.Outcome, sqlstate(err))
	check(complete("order-1", 2, 2).Outcome == "completed", "complete attempt 2")

	// 5. LISTEN and catch up.
	f := follow(os.Getenv("A2_LISTEN_URL"), []string{"order-1"})
	f.wait(func() bool { return f.lastSeen["order-1"] >= 2 })
	must(appendEvents(pool, "order-1", settled("order-1/packed", "order.packed")))
	f.wait(func() bool { return f.lastSeen["order-1"] >= 3 })
	fmt.Printf("listen: caught up to 2, heard %d\n", f.lastSeen["order-1"])

	// 6. A server restart.
	restart := exec.Command("sh", "-c", os.Getenv("A2_RESTART"))
	restart.Stdout, restart.Stderr = os.Stderr, os.Stderr
	check(restart.Run() == nil, "restart")
	shipped := must(retrying(func() (AppendResult, error) {
		return appendEvents(pool, "order-1", settled("order-1/shipped", "order.shipped"))
	}))
	f.wait(func() bool { return f.lastSeen["order-1"] >= 4 })
	fmt.Printf("restart: appended %d, listener caught up to %d\n", shipped.Events[0].Index, f.lastSeen["order-1"])
	f.wait(func() bool { return f.listens >= 2 })
	must(retrying(func() (AppendResult, error) {
		return appendEvents(pool, "order-1", settled("order-1/delivered", "order.delivered"))
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
				must(appendEvents(pool, sessionID, []map[string]any{{"id": sessionID + "/placed", "type": "order.placed",
					"payload": map[string]any{"items": []map[string]any{{"sku": "tea", "qty": 1}}}}}))
				c := claim(sessionID, fmt.Sprintf("worker-%d", w), 30000)
				check(must(shipInTransaction(sessionID, c.Events[0], []any{})).Outcome == "completed", sessionID)
			}
		}(w)
	}
	wg.Wait()
	fmt.Printf("burst: %d orders shipped by 8 workers\n", count("burst-%"))
	pool.Close()
	fmt.Println("done")
}
