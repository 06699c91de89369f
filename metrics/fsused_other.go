//go:build !unix

package metrics

// fsUsedBytes is not measured off Unix: rocketmq_storage_size_bytes is left out.
func fsUsedBytes(string) (int64, bool) { return 0, false }
