package pop

import (
	"encoding/json"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/store"
)

// ReplaceFromMaster makes the table its master's, from the body of
// GET_ALL_MESSAGE_REQUEST_MODE, and writes the file: what a 5.3.3 slave's
// SlaveSynchronize.syncMessageRequestMode does (topics the master lacks go,
// the master's replace the local ones whole). A SLAVE broker calls it every
// round, so that the POP modes are in place should its store be started
// as a master.
func (m *ModeManager) ReplaceFromMaster(body []byte) error {
	var f modeFile
	if err := fastjson.Unmarshal(body, &f); err != nil {
		return err
	}
	table := make(map[string]map[string]RequestMode, len(f.MessageRequestModeMap))
	for t, groups := range f.MessageRequestModeMap {
		if groups != nil {
			table[t] = groups
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.table = table
	b, err := json.MarshalIndent(modeFile{m.table}, "", "\t")
	if err != nil {
		return err
	}
	return store.WriteFileAtomic(m.fs, m.path, b)
}
