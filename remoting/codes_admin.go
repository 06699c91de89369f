package remoting

// More request codes of apache/rocketmq 4.9.8 RequestCode.java: the admin,
// offset and name-server config requests.
const (
	QueryConsumeTimeSpan         int32 = 303
	CleanExpiredConsumeQueue     int32 = 306
	QueryCorrectionOffset        int32 = 308
	GetUnitTopicList             int32 = 311
	GetHasUnitSubTopicList       int32 = 312
	GetHasUnitSubUnunitTopicList int32 = 313
	CloneGroupOffset             int32 = 314
	CleanUnusedTopic             int32 = 316
	UpdateNamesrvConfig          int32 = 318
	GetNamesrvConfig             int32 = 319
	ResumeCheckHalfMessage       int32 = 323
	// GetBrokerHaStatus is 5.3.3's GET_BROKER_HA_STATUS (RequestCode.java:238).
	GetBrokerHaStatus int32 = 907
)
