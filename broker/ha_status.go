package broker

import (
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store/ha/autoswitch"
)

// processGetBrokerHAStatus serves 5.3.3's GET_BROKER_HA_STATUS (no request
// header; AdminBrokerProcessor.getBrokerHaStatus) with HARuntimeInfo as
// the classic DefaultHAService.getRuntimeInfo fills it:
//
//   - a master: masterCommitLogMaxOffset, and per connected slave its
//     address, last ack (-1 before the first), diff = max - ack (not
//     clamped, as stock), inSync (diff below haMaxGapNotInSync), the bytes
//     sent in the last second and where the next chunk starts; the client
//     part stays empty (zeros, masterAddr null).
//   - a slave: the HA master address, its commitlog max offset, the last
//     read (0 while disconnected) and report times and the bytes received
//     in the last second. masterFlushOffset is 0: stock serves the store
//     checkpoint's masterFlushedOffset, which only 906/908 or
//     syncMasterFlushOffsetWhenStartup (default false) set, in either mode
//     (DefaultHAService :229, AutoSwitchHAService :390).
//
// A broker with neither (not started) answers SYSTEM_ERROR with stock's
// remark for a store without an HA service.
func (b *Broker) processGetBrokerHAStatus(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	info := remoting.HARuntimeInfo{HAConnectionInfo: []remoting.HAConnectionRuntimeInfo{}}
	if as, ok := b.autoSwitchStats(); ok {
		b.autoSwitchRuntimeInfo(&info, as)
	} else if st, ok := b.HAMasterStats(); ok {
		info.Master = true
		info.MasterCommitLogMaxOffset = st.MasterMaxOffset
		for _, sl := range st.Slaves {
			if sl.InSync {
				info.InSyncSlaveNums++
			}
			info.HAConnectionInfo = append(info.HAConnectionInfo, remoting.HAConnectionRuntimeInfo{
				Addr: sl.Addr, SlaveAckOffset: sl.AckOffset, Diff: st.MasterMaxOffset - sl.AckOffset,
				InSync: sl.InSync, TransferredByteInSecond: sl.TransferredByteInSecond, TransferFromWhere: sl.TransferFromWhere,
			})
		}
	} else if st, ok := b.HAClientStats(); ok {
		info.HAClientRuntimeInfo = remoting.HAClientRuntimeInfo{
			MasterAddr: st.MasterAddr, MaxOffset: b.store.MaxPhyOffset(),
			LastReadTimestamp: st.LastReadTimestamp, LastWriteTimestamp: st.LastWriteTimestamp,
			TransferredByteInSecond: st.TransferredByteInSecond,
		}
	} else {
		return remoting.NewResponse(req, remoting.SystemError, "Can not get HARuntimeInfo, may be duplicationEnable is true")
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = remoting.MarshalBody(&info)
	return resp
}

// autoSwitchStats is the controller-mode HA service's state, and false
// when the broker runs the classic one.
func (b *Broker) autoSwitchStats() (autoswitch.ServiceStats, bool) {
	if b.ctl == nil {
		return autoswitch.ServiceStats{}, false
	}
	as, ok := b.ctl.ha.(autoSwitchHA)
	if !ok {
		return autoswitch.ServiceStats{}, false
	}
	return as.Stats(), true
}

// autoSwitchRuntimeInfo fills HARuntimeInfo as AutoSwitchHAService
// .getRuntimeInfo (5.3.3 :379-413): by the broker's role; on a slave the
// HA client's last read and write times and bytes read in the last second
// (masterFlushOffset as the classic slave's, above); on a master each
// connection with its ack, bytes written in the last second and whether
// its slave is in the sync state set, and inSyncSlaveNums the set's size
// less the master.
func (b *Broker) autoSwitchRuntimeInfo(info *remoting.HARuntimeInfo, st autoswitch.ServiceStats) {
	if b.isSlave() {
		info.HAClientRuntimeInfo = remoting.HAClientRuntimeInfo{MasterAddr: st.MasterAddr, MaxOffset: b.store.MaxPhyOffset(),
			LastReadTimestamp: st.LastReadTimestamp, LastWriteTimestamp: st.LastWriteTimestamp,
			TransferredByteInSecond: st.TransferredByteInSecond}
		return
	}
	info.Master = true
	info.MasterCommitLogMaxOffset = st.MaxOffset
	for _, sl := range st.Slaves {
		info.HAConnectionInfo = append(info.HAConnectionInfo, remoting.HAConnectionRuntimeInfo{
			Addr: sl.Addr, SlaveAckOffset: sl.AckOffset, Diff: st.MaxOffset - sl.AckOffset,
			InSync: sl.InSync, TransferredByteInSecond: sl.TransferredByteInSecond, TransferFromWhere: sl.TransferFrom,
		})
	}
	info.InSyncSlaveNums = int32(max(len(st.SyncStateSet)-1, 0))
}
