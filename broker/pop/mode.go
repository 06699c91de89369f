package pop

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// modeFileName is MessageRequestModeManager's config file.
const modeFileName = "messageRequestMode.json"

// Message request modes (MessageRequestMode).
const (
	ModePull = "PULL"
	ModePop  = "POP"
)

// RequestMode is SetMessageRequestModeRequestBody.
type RequestMode struct {
	Topic            string `json:"topic"`
	ConsumerGroup    string `json:"consumerGroup"`
	Mode             string `json:"mode"`
	PopShareQueueNum int32  `json:"popShareQueueNum"`
}

// ModeManager keeps the request mode per topic and group
// (config/messageRequestMode.json, stock layout).
type ModeManager struct {
	path  string
	fs    store.FS // Options.FS (nil: the real file system)
	mu    sync.Mutex
	table map[string]map[string]RequestMode // topic → group → mode
}

type modeFile struct {
	MessageRequestModeMap map[string]map[string]RequestMode `json:"messageRequestModeMap"`
}

// NewModeManager loads path (missing: empty; unreadable: error).
func NewModeManager(path string) (*ModeManager, error) {
	m := &ModeManager{path: path, table: make(map[string]map[string]RequestMode)}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(strings.TrimSpace(string(b))) == 0) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	var f modeFile
	if err := fastjson.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("pop: %s: %w", path, err)
	}
	for t, groups := range f.MessageRequestModeMap {
		m.table[t] = groups
	}
	return m, nil
}

// Get returns the mode of group on topic (default PULL, share -1).
func (m *ModeManager) Get(topic, group string) RequestMode {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.table[topic][group]; ok {
		return r
	}
	return RequestMode{Topic: topic, ConsumerGroup: group, Mode: ModePull, PopShareQueueNum: -1}
}

// Set records r and persists the table.
func (m *ModeManager) Set(r RequestMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.table[r.Topic]
	if g == nil {
		g = make(map[string]RequestMode)
		m.table[r.Topic] = g
	}
	g[r.ConsumerGroup] = r
	b, err := json.MarshalIndent(modeFile{m.table}, "", "\t")
	if err != nil {
		return err
	}
	return store.WriteFileAtomic(m.fs, m.path, b)
}

// Encode is the table as messageRequestMode.json holds it, compact
// (MessageRequestModeManager.encode).
func (m *ModeManager) Encode() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return json.Marshal(modeFile{m.table})
}

// processGetAllMessageRequestMode serves GET_ALL_MESSAGE_REQUEST_MODE (402,
// AdminBrokerProcessor.getAllMessageRequestMode, which a 5.x slave broker
// syncs from its master): the whole table as the body.
func (s *Service) processGetAllMessageRequestMode(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	b, err := s.modes.Encode()
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = b
	return resp
}

// processSetMessageRequestMode serves SET_MESSAGE_REQUEST_MODE (mqadmin
// setConsumeMode).
func (s *Service) processSetMessageRequestMode(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var r RequestMode
	if err := fastjson.Unmarshal(req.Body, &r); err != nil || r.Topic == "" || r.ConsumerGroup == "" {
		return remoting.NewResponse(req, remoting.SystemError, "set message request mode: bad body")
	}
	if strings.HasPrefix(r.Topic, message.RetryTopicPrefix) {
		return remoting.NewResponse(req, remoting.NoPermission, "retry topic is not allowed to set mode")
	}
	if r.Mode != ModePull && r.Mode != ModePop {
		return remoting.NewResponse(req, remoting.InvalidParameter, "unknown message request mode "+r.Mode)
	}
	if err := s.modes.Set(r); err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	return remoting.NewResponse(req, remoting.Success, "")
}

type messageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
}

type queueAssignment struct {
	MessageQueue messageQueue      `json:"messageQueue"`
	Mode         string            `json:"mode"`
	Attachments  map[string]string `json:"attachments,omitempty"`
}

// processQueryAssignment serves QUERY_ASSIGNMENT (QueryAssignmentProcessor)
// for this broker's queues: in POP mode with no share count (or one of at
// least clients-1) every client gets queue -1; otherwise the queues are
// shared out averagely over the group's clients.
func (s *Service) processQueryAssignment(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var body struct {
		Topic         string `json:"topic"`
		ConsumerGroup string `json:"consumerGroup"`
		ClientID      string `json:"clientId"`
		StrategyName  string `json:"strategyName"`
		MessageModel  string `json:"messageModel"`
	}
	if err := fastjson.Unmarshal(req.Body, &body); err != nil {
		return remoting.NewResponse(req, remoting.SystemError, "query assignment: bad body")
	}
	tc := s.opts.Topics.Get(body.Topic)
	if tc == nil { // stock: no queues, no assignments (the client keeps its old ones)
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.Body = []byte("{}")
		return resp
	}
	mode := s.modes.Get(body.Topic, body.ConsumerGroup)
	if strings.HasPrefix(body.Topic, message.RetryTopicPrefix) {
		mode.Mode = ModePull
	}
	all := make([]messageQueue, 0, tc.ReadQueueNums)
	for q := int32(0); q < tc.ReadQueueNums; q++ {
		all = append(all, messageQueue{body.Topic, s.opts.BrokerName, q})
	}
	var mine []messageQueue
	switch {
	case body.MessageModel == "BROADCASTING":
		mine = all
	default:
		cids := []string(nil)
		if s.opts.ClientIDs != nil {
			cids = s.opts.ClientIDs.ClientIDs(body.ConsumerGroup)
		}
		if !contains(cids, body.ClientID) {
			cids = append(cids, body.ClientID)
		}
		sort.Strings(cids)
		if mode.Mode == ModePop && (mode.PopShareQueueNum <= 0 || int(mode.PopShareQueueNum) >= len(cids)-1) {
			mine = []messageQueue{{body.Topic, s.opts.BrokerName, -1}}
		} else {
			mine = allocateAveragely(all, cids, body.ClientID)
		}
	}
	out := struct {
		MessageQueueAssignments []queueAssignment `json:"messageQueueAssignments"`
	}{MessageQueueAssignments: make([]queueAssignment, 0, len(mine))}
	for _, mq := range mine {
		out.MessageQueueAssignments = append(out.MessageQueueAssignments, queueAssignment{MessageQueue: mq, Mode: mode.Mode})
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = marshal(out)
	return resp
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// allocateAveragely is AllocateMessageQueueAveragely.
func allocateAveragely(mqs []messageQueue, cids []string, cid string) []messageQueue {
	idx := sort.SearchStrings(cids, cid)
	n, c := len(mqs), len(cids)
	mod := n % c
	size := 1
	if n > c {
		size = n / c
		if mod > 0 && idx < mod {
			size++
		}
	}
	start := idx*size + mod
	if mod > 0 && idx < mod {
		start = idx * size
	}
	rng := min(size, n-start)
	var out []messageQueue
	for i := 0; i < rng; i++ {
		out = append(out, mqs[(start+i)%n])
	}
	return out
}
