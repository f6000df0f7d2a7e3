package etcdstore

// FeedMisses is how many reads of the recent log the feeds of this process
// could not answer (tests).
func FeedMisses() int64 { return feedMisses.Load() }

// LogScans is how many reads of the log in this process scanned the keys of
// p/ instead of reading etcd's history (logtail.go).
func LogScans() int64 { return logScans.Load() }
