package remoting

// Controller request and response codes (5.3.3 RequestCode.java:226-282,
// ResponseCode.java:103-128): the codes the controller serves (package
// controller), sends (NOTIFY_BROKER_ROLE_CHANGED) and answers with.
const (
	BrokerHeartbeat                      int32 = 904
	ControllerAlterSyncStateSet          int32 = 1001
	ControllerElectMaster                int32 = 1002
	ControllerRegisterBroker             int32 = 1003
	ControllerGetReplicaInfo             int32 = 1004
	ControllerGetMetadataInfo            int32 = 1005
	ControllerGetSyncStateData           int32 = 1006
	GetBrokerEpochCache                  int32 = 1007
	NotifyBrokerRoleChanged              int32 = 1008
	UpdateControllerConfig               int32 = 1009
	GetControllerConfig                  int32 = 1010
	CleanBrokerData                      int32 = 1011
	ControllerGetNextBrokerID            int32 = 1012
	ControllerApplyBrokerID              int32 = 1013
	ControllerFencedMasterEpoch          int32 = 2000
	ControllerFencedSyncStateSetEpoch    int32 = 2001
	ControllerInvalidMaster              int32 = 2002
	ControllerInvalidReplicas            int32 = 2003
	ControllerMasterNotAvailable         int32 = 2004
	ControllerInvalidRequest             int32 = 2005
	ControllerBrokerNotAlive             int32 = 2006
	ControllerNotLeader                  int32 = 2007
	ControllerBrokerMetadataNotExist     int32 = 2008
	ControllerInvalidCleanBrokerMetadata int32 = 2009
	ControllerBrokerNeedToBeRegistered   int32 = 2010
	ControllerMasterStillExist           int32 = 2011
	ControllerElectMasterFailed          int32 = 2012
	ControllerAlterSyncStateSetFailed    int32 = 2013
	ControllerBrokerIDInvalid            int32 = 2014
)

// FirstBrokerControllerID is the id the controller gives the first broker
// of a broker set (5.3.3 MixAll.FIRST_BROKER_CONTROLLER_ID).
const FirstBrokerControllerID int64 = 1
