package timer

// RecallTag is the TAGS value of the delete markers Recall stores.
const RecallTag = "_RECALL_TAG_"
