// Package console serves a small read-only web console on the metrics port:
// the cluster and its brokers, the topics with their queues and offsets,
// consumer groups with their lag, pending delay levels, a chart of pending
// timers by due time, the last deliveries' lateness and a message lookup by
// id or key. Pages are rendered on the server (html/template) with inline
// CSS and SVG: no script, no build step, nothing fetched from elsewhere.
//
// console imports admin (the name server's cluster table), broker and the
// metrics package (lag and timer buckets), and is wired onto the metrics
// server's mux by cmd/rmq.
package console

import (
	"context"
	_ "embed"
	"html/template"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/broker/brokerstats"
	"github.com/rmqio/rmq/internal/histo"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/metrics"
	"github.com/rmqio/rmq/topicgroup"
)

//go:embed console.html
var pageHTML string

var page = template.Must(template.New("console").Funcs(template.FuncMap{
	"ms":   func(ms int64) string { return time.UnixMilli(ms).Format("2006-01-02 15:04:05.000") },
	"time": func(t time.Time) string { return t.Format("2006-01-02 15:04:05") },
}).Parse(pageHTML))

// Console renders the pages of one broker.
type Console struct {
	b   *broker.Broker
	adm *admin.Admin // nil without name servers
	now func() time.Time
}

// New returns the console of b; now is the clock of ages (nil: time.Now).
func New(b *broker.Broker, now func() time.Time) *Console {
	if now == nil {
		now = time.Now
	}
	c := &Console{b: b, now: now}
	if ns := b.Options().NamesrvAddr; ns != "" {
		c.adm = admin.New(admin.Options{NamesrvAddr: ns, Timeout: 2 * time.Second})
	}
	return c
}

// Close drops the name server connections.
func (c *Console) Close() {
	if c.adm != nil {
		c.adm.Close()
	}
}

// Routes registers the console's pages on mux.
func (c *Console) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", c.guard(c.serve))
	mux.HandleFunc("GET /console", c.guard(c.serve))
}

// guard lets a request through when the broker runs without ACL, or when it
// carries HTTP basic credentials of an admin account of plain_acl.yml (user
// its accessKey, password its secretKey): the pages show message bodies and
// client addresses, which aclEnable keeps from anyone else.
func (c *Console) guard(h http.HandlerFunc) http.HandlerFunc {
	m := c.b.ACL()
	if m == nil {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if ak, sk, ok := r.BasicAuth(); ok && m.Admin(ak, sk) {
			h(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="rmq console: an admin account of plain_acl.yml", charset="UTF-8"`)
		http.Error(w, "aclEnable is on: sign in with an admin account of plain_acl.yml (accessKey, secretKey)", http.StatusUnauthorized)
	}
}

type view struct {
	Now        time.Time
	Cluster    string
	Broker     brokerView
	Brokers    []brokerRow
	ClusterErr string
	Topics     []topicRow
	System     []topicRow
	Groups     []groupRow
	Levels     []levelRow
	Timer      *timerView
	Deliveries []deliveryRow
	Lookup     lookupView
}

type brokerView struct {
	Name, Addr, Namesrv string
	Ready               bool
	StoreMin, StoreMax  int64
	DispatchBehind      int64
}

// brokerRow is one broker of the cluster table: Role and Lag as rmq admin
// clusterList --replication shows them (admin.Replication); Lag is "-"
// where unknown or not replicated. In controller mode Role is the role the
// controller gave, Epoch the master epoch and SyncStateSet the set's
// member ids (on the master's row: a slave keeps none); "-" otherwise.
type brokerRow struct {
	Cluster, Name       string
	ID                  int64
	Addr                string
	Role, Lag           string
	Epoch, SyncStateSet string
}

type topicRow struct {
	Name            string
	Read, Write     int32
	Perm            string
	Order           bool
	Messages, InAll int64
	Queues          []queueRow
}

type queueRow struct {
	ID       int32
	Min, Max int64
}

type groupRow struct {
	metrics.GroupLag
	Clients int
}

type levelRow struct {
	Level   int
	Delay   string
	Pending int64
}

type timerView struct {
	Pending int64
	Bars    []bar
	Width   int
	Height  int
	Max     int64
}

type bar struct {
	Label      string
	Count      int64
	X, Y, W, H int
	TextY      int
}

type deliveryRow struct {
	histo.Delivery
	LatenessMs int64
}

type lookupView struct {
	Topic, Key, ID string
	Asked          bool
	Err            string
	Results        []messageRow
}

type messageRow struct {
	MsgID, Topic, Tags, Keys, UniqKey, Body string
	QueueID                                 int32
	QueueOffset                             int64
	StoreMs, BornMs                         int64
}

func (c *Console) serve(w http.ResponseWriter, r *http.Request) {
	v := c.build(r.Context())
	q := r.URL.Query()
	v.Lookup = c.lookup(strings.TrimSpace(q.Get("topic")), strings.TrimSpace(q.Get("key")), strings.TrimSpace(q.Get("id")))
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := page.Execute(w, v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func (c *Console) build(ctx context.Context) *view {
	b := c.b
	o := b.Options()
	now := c.now()
	st := b.Store()
	v := &view{Now: now, Cluster: o.BrokerClusterName, Broker: brokerView{
		Name: o.BrokerName, Addr: b.Addr(), Namesrv: o.NamesrvAddr, Ready: b.Ready(),
		StoreMin: st.MinPhyOffset(), StoreMax: st.MaxPhyOffset(), DispatchBehind: st.DispatchBehind(),
	}}
	c.cluster(ctx, v)

	in := map[string]int64{}
	b.BrokerStats().TopicPut.Each(func(k brokerstats.Key, it *brokerstats.Item) { in[k.Topic] = it.Value() })
	wrapper := b.Topics().Snapshot()
	names := make([]string, 0, len(wrapper.TopicConfigTable))
	for n := range wrapper.TopicConfigTable {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		tc := wrapper.TopicConfigTable[n]
		row := topicRow{Name: n, Read: tc.ReadQueueNums, Write: tc.WriteQueueNums, Perm: topicgroup.PermString(tc.Perm), Order: tc.Order, InAll: in[n]}
		for q := int32(0); q < max(tc.ReadQueueNums, tc.WriteQueueNums); q++ {
			qr := queueRow{ID: q, Min: max(st.MinOffsetInQueue(n, q), 0), Max: max(st.MaxOffsetInQueue(n, q), 0)}
			row.Messages += qr.Max - qr.Min
			row.Queues = append(row.Queues, qr)
		}
		if b.Topics().IsSystemTopic(n) || strings.HasPrefix(n, message.RetryTopicPrefix) || strings.HasPrefix(n, message.DLQTopicPrefix) {
			v.System = append(v.System, row)
		} else {
			v.Topics = append(v.Topics, row)
		}
	}

	for _, l := range metrics.Lags(b, now) {
		row := groupRow{GroupLag: l}
		if cc, ok := b.Clients().Consumers.Connection(l.Group); ok {
			row.Clients = len(cc.ConnectionSet)
		}
		v.Groups = append(v.Groups, row)
	}

	sched := b.Schedule()
	levels := sched.Levels()
	for i, n := range sched.PendingByLevel() {
		v.Levels = append(v.Levels, levelRow{Level: i + 1, Delay: levels[i].String(), Pending: n})
	}
	var recent []histo.Delivery
	recent = append(recent, sched.Deliveries().Recent.List()...)
	if t := b.Timers(); t != nil {
		v.Timer = timerChart(t.PendingByDue(metrics.TimerBounds), t.Stats().Pending)
		recent = append(recent, t.Deliveries().Recent.List()...)
	}
	slices.SortStableFunc(recent, func(a, b histo.Delivery) int {
		switch {
		case a.AtMs > b.AtMs:
			return -1
		case a.AtMs < b.AtMs:
			return 1
		}
		return 0
	})
	for _, d := range recent[:min(len(recent), 30)] {
		v.Deliveries = append(v.Deliveries, deliveryRow{Delivery: d, LatenessMs: max(d.AtMs-d.DueMs, 0)})
	}
	return v
}

// cluster reads the name server's cluster table and every member's runtime
// table (for role and replication lag); without name servers the broker is
// the whole cluster. A member that does not answer keeps its row, with the
// role its brokerId tells and no lag, and is named above the table.
func (c *Console) cluster(ctx context.Context, v *view) {
	if c.adm == nil {
		row := brokerRow{Cluster: v.Cluster, Name: v.Broker.Name, ID: c.b.Options().BrokerID, Addr: v.Broker.Addr}
		row.Role, row.Lag = c.localReplication()
		row.Epoch, row.SyncStateSet = "-", "-"
		if st, ok := c.b.ControllerState(); ok {
			row.ID, row.Role, row.Epoch = st.BrokerID, st.Role(), strconv.FormatInt(int64(st.MasterEpoch), 10)
			row.SyncStateSet = dash(st.SyncStateSetText())
		}
		v.Brokers = []brokerRow{row}
		return
	}
	l, err := c.adm.ClusterList(ctx)
	if err != nil {
		v.ClusterErr = err.Error()
	}
	if l == nil {
		return
	}
	// ClusterList orders by cluster, broker name and id.
	for _, b := range l.Brokers {
		v.Brokers = append(v.Brokers, brokerRow{Cluster: b.Cluster, Name: b.BrokerName, ID: b.BrokerID, Addr: b.Addr,
			Role: b.Role, Lag: lagText(b.LagBytes), Epoch: dash(b.MasterEpoch), SyncStateSet: dash(b.SyncStateSet)})
	}
}

// dash shows "" as "-", the table's mark for none.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// localReplication is this broker's role and lag without a name server: a
// master's largest slave lag (its HA service knows every ack), "-" on a
// slave, which cannot know its master's end.
func (c *Console) localReplication() (role, lag string) {
	role = c.b.Options().BrokerRole
	lagBytes := int64(-1)
	if st, ok := c.b.HAMasterStats(); ok {
		for _, sl := range st.Slaves {
			lagBytes = max(lagBytes, broker.SlaveLag(st.MasterMaxOffset, sl.AckOffset))
		}
	}
	return role, lagText(lagBytes)
}

func lagText(n int64) string {
	if n < 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

// timerChart lays out one bar per due-time bucket.
func timerChart(counts []int64, pending int64) *timerView {
	const barW, gap, top, plotH, labelH = 56, 8, 18, 120, 20
	tv := &timerView{Pending: pending, Height: top + plotH + labelH}
	for _, n := range counts {
		tv.Max = max(tv.Max, n)
	}
	for i, n := range counts {
		label := "> " + durLabel(metrics.TimerBounds[len(metrics.TimerBounds)-1])
		if i < len(metrics.TimerBounds) {
			label = "≤ " + durLabel(metrics.TimerBounds[i])
		}
		h := 0
		if tv.Max > 0 {
			h = int(int64(plotH) * n / tv.Max)
		}
		x := gap + i*(barW+gap)
		tv.Bars = append(tv.Bars, bar{Label: label, Count: n, X: x, W: barW, Y: top + plotH - h, H: h, TextY: top + plotH - h - 4})
	}
	tv.Width = gap + len(counts)*(barW+gap)
	return tv
}

func durLabel(d time.Duration) string {
	switch {
	case d >= 24*time.Hour:
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	case d >= time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	case d >= time.Minute:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	}
	return strconv.Itoa(int(d/time.Second)) + "s"
}

// lookup finds messages by offset message id, or by key or unique key
// (UNIQ_KEY, the id producers print) on a topic.
func (c *Console) lookup(topic, key, id string) lookupView {
	lv := lookupView{Topic: topic, Key: key, ID: id}
	if topic == "" && key == "" && id == "" {
		return lv
	}
	lv.Asked = true
	st := c.b.Store()
	var recs [][]byte
	if id != "" {
		if _, phy, err := message.DecodeMessageID(id); err == nil {
			if rec, err := st.LookMessageByOffset(phy); err == nil {
				recs = append(recs, rec)
			}
		}
		if len(recs) == 0 && topic != "" {
			key = id // a client message id is indexed as UNIQ_KEY
		}
	}
	if key != "" {
		if topic == "" {
			lv.Err = "a key lookup needs the topic"
			return lv
		}
		res, err := st.QueryMessage(topic, key, 32, 0, c.now().UnixMilli()+1000)
		if err != nil {
			lv.Err = err.Error()
			return lv
		}
		recs = append(recs, res.Messages...)
	}
	for _, rec := range recs {
		m, err := message.DecodeRecord(rec)
		if err != nil {
			continue
		}
		body := string(m.Body)
		if len(body) > 200 {
			body = body[:200] + "…"
		}
		lv.Results = append(lv.Results, messageRow{
			MsgID: m.MsgID, Topic: m.Topic, Tags: m.Properties[message.PropTags], Keys: m.Properties[message.PropKeys],
			UniqKey: m.Properties[message.PropUniqKey], Body: body, QueueID: m.QueueID, QueueOffset: m.QueueOffset,
			StoreMs: m.StoreTimestamp, BornMs: m.BornTimestamp,
		})
	}
	if len(lv.Results) == 0 && lv.Err == "" {
		lv.Err = "no message found"
	}
	return lv
}
