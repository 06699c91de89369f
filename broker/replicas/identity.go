package replicas

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/rmqio/rmq/store"
)

// The broker's identity in its broker set, as 5.3.3 keeps it
// (store/ha/autoswitch BrokerMetadata and TempBrokerMetadata): the file
// storePathBrokerIdentity holds "cluster#broker#id" once the controller
// gave the id, and "<that path>-temp" holds "cluster#broker#id#checkCode"
// between asking for an id (GET_NEXT_BROKER_ID) and having it applied
// (APPLY_BROKER_ID). Which of the two exists is how registration resumes
// after a crash between its steps. Both files are written whole or not at
// all (store.WriteFileAtomic); a Java broker's files read the same.

// maxIdentityFile bounds what is read of an identity file: stock writes a
// few dozen bytes.
const maxIdentityFile = 4 << 10

// Identity is the content of an identity file; CheckCode is set only in
// the temporary one ("ip:port;millis").
type Identity struct {
	Cluster, Broker string
	ID              int64
	CheckCode       string
}

var errIdentity = errors.New("bad broker identity file")

// ParseIdentity reads an identity file's text: three '#'-separated fields,
// four when temp. Like stock, text after the fields it reads is ignored
// (a '#' in the check code is not expected: it is ip:port;millis).
func ParseIdentity(b []byte, temp bool) (Identity, error) {
	if len(b) > maxIdentityFile {
		return Identity{}, fmt.Errorf("%w: %d bytes", errIdentity, len(b))
	}
	f := strings.Split(string(b), "#")
	want := 3
	if temp {
		want = 4
	}
	if len(f) < want {
		return Identity{}, fmt.Errorf("%w: %d fields, want %d", errIdentity, len(f), want)
	}
	id, err := strconv.ParseInt(strings.TrimSpace(f[2]), 10, 64)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: broker id %q", errIdentity, f[2])
	}
	v := Identity{Cluster: f[0], Broker: f[1], ID: id}
	if temp {
		v.CheckCode = f[3]
	}
	if v.Cluster == "" || v.Broker == "" || (temp && v.CheckCode == "") {
		return Identity{}, fmt.Errorf("%w: empty field", errIdentity)
	}
	return v, nil
}

// Format is the file text of v (temp: with the check code).
func (v Identity) Format(temp bool) []byte {
	s := v.Cluster + "#" + v.Broker + "#" + strconv.FormatInt(v.ID, 10)
	if temp {
		s += "#" + v.CheckCode
	}
	return []byte(s)
}

// identityFiles are the two files of one broker.
type identityFiles struct {
	path string // storePathBrokerIdentity; the temp file is path+"-temp"
	fs   store.FS
}

func (f identityFiles) tempPath() string { return f.path + "-temp" }

// load reads one of the files: ok false when it does not exist. A file
// that exists but does not parse is an error (stock: not loaded, and the
// log says so); the caller treats it as absent after logging.
func (f identityFiles) load(temp bool) (Identity, bool, error) {
	p := f.path
	if temp {
		p = f.tempPath()
	}
	b, err := readLimited(p)
	if errors.Is(err, os.ErrNotExist) {
		return Identity{}, false, nil
	}
	if err != nil {
		return Identity{}, false, err
	}
	v, err := ParseIdentity(b, temp)
	if err != nil {
		return Identity{}, false, fmt.Errorf("%s: %w", p, err)
	}
	return v, true, nil
}

func readLimited(p string) ([]byte, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return io.ReadAll(io.LimitReader(fh, maxIdentityFile+1))
}

// writeTemp persists step 1 (createTempMetadataFile).
func (f identityFiles) writeTemp(v Identity) error {
	return store.WriteFileAtomic(f.fs, f.tempPath(), v.Format(true))
}

// commit persists step 2 (createMetadataFileAndDeleteTemp): the identity
// file is durable before the temp file goes, so a crash between leaves
// both, and the identity file wins on restart.
func (f identityFiles) commit(v Identity) error {
	v.CheckCode = ""
	if err := store.WriteFileAtomic(f.fs, f.path, v.Format(false)); err != nil {
		return err
	}
	return f.clearTemp()
}

// clearTemp deletes the temp file (tempBrokerMetadata.clear).
func (f identityFiles) clearTemp() error {
	if err := os.Remove(f.tempPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
