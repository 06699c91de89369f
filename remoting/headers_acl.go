package remoting

// ACL 1.0 administration request headers (acl/processors.go serves them).
// A nullable field that is absent is nil: the plain-ACL update keeps the
// account's value then.

// CreateAccessConfigRequestHeader is UPDATE_AND_CREATE_ACL_CONFIG's;
// TopicPerms and GroupPerms are the comma lists as sent.
type CreateAccessConfigRequestHeader struct {
	AccessKey          string
	SecretKey          *string
	WhiteRemoteAddress *string
	Admin              bool
	DefaultTopicPerm   *string
	DefaultGroupPerm   *string
	TopicPerms         *string
	GroupPerms         *string
}

func (r *CreateAccessConfigRequestHeader) decodeHeader(h *Header) {
	r.AccessKey = h.Str("accessKey", true)
	r.SecretKey = h.OptStr("secretKey")
	r.WhiteRemoteAddress = h.OptStr("whiteRemoteAddress")
	r.Admin = h.Bool("admin")
	r.DefaultTopicPerm = h.OptStr("defaultTopicPerm")
	r.DefaultGroupPerm = h.OptStr("defaultGroupPerm")
	r.TopicPerms = h.OptStr("topicPerms")
	r.GroupPerms = h.OptStr("groupPerms")
}

// DeleteAccessConfigRequestHeader is DELETE_ACL_CONFIG's.
type DeleteAccessConfigRequestHeader struct{ AccessKey string }

func (r *DeleteAccessConfigRequestHeader) decodeHeader(h *Header) {
	r.AccessKey = h.Str("accessKey", true)
}

// UpdateGlobalWhiteAddrsConfigRequestHeader is
// UPDATE_GLOBAL_WHITE_ADDRS_CONFIG's. Both fields are @CFNotNull in Java,
// but 4.9.8's decodeCommandCustomHeader only logs a missing one and leaves
// it null, so neither is required here.
type UpdateGlobalWhiteAddrsConfigRequestHeader struct {
	GlobalWhiteAddrs *string
	AclFileFullPath  string
}

func (r *UpdateGlobalWhiteAddrsConfigRequestHeader) decodeHeader(h *Header) {
	r.GlobalWhiteAddrs = h.OptStr("globalWhiteAddrs")
	r.AclFileFullPath = h.Str("aclFileFullPath", false)
}
