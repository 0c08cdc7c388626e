// Command tlogcheck checks flowstore's transparency-log proofs and signed notes with code nobody at
// flowstore wrote: Go's checksum-database packages golang.org/x/mod/sumdb/tlog (RFC 6962 Merkle trees:
// RecordHash, TreeHash, CheckRecord, CheckTree, ProveRecord, ProveTree) and golang.org/x/mod/sumdb/note
// (signed notes: note.Open verifies Ed25519 signatures), as Debian's golang-golang-x-mod-dev ships them,
// and Go's crypto/ed25519. test/tlog/x-mod.test.ts builds it in GOPATH mode and runs it.
//
// x/mod 0.7 knows one signature type, Ed25519 (0x01); a C2SP tlog-cosignature (cosignature/v1, type
// 0x04) is checked through note.Open with a note.Verifier given here: its key ID is C2SP signed-note's
// SHA-256(name || 0x0A || 0x04 || key)[:4], and its signature is a big-endian u64 timestamp and an
// Ed25519 signature (crypto/ed25519) over "cosignature/v1\ntime <t>\n" followed by the note's text.
//
// Input (stdin, JSON): {"logKey": vkey, "witnesses": [vkey...], "checks": [check...]}; output (stdout,
// JSON): one result per check, in order: {"ok": bool, "error": "..."} and what the check found.
//
//	{"type":"note","note":N}                                 N verifies with the log's key; its checkpoint
//	{"type":"inclusion","note":N,"index":i,"leaf":B,"proof":[H]} tlog.CheckRecord of leaf i in N's tree
//	{"type":"consistency","old":N0,"note":N1,"proof":[H]}     tlog.CheckTree: N1's tree extends N0's
//	{"type":"cosigned","note":N}                             the log's signature and which witnesses cosigned
//	{"type":"prove","leaves":[B],"sizes":[n],"pairs":[[m,n]],"records":[[i,n]]}
//	    x/mod builds the tree of the leaves and answers its roots (TreeHash), its consistency proofs
//	    (ProveTree, from m to n) and its inclusion proofs (ProveRecord, leaf i in the tree of n)
//
// B is base64 bytes, H a base64 SHA-256 hash, N a signed note's text.
package main

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type check struct {
	Type    string     `json:"type"`
	Note    string     `json:"note"`
	Old     string     `json:"old"`
	Index   int64      `json:"index"`
	Leaf    string     `json:"leaf"`
	Proof   []string   `json:"proof"`
	Leaves  []string   `json:"leaves"`
	Sizes   []int64    `json:"sizes"`
	Pairs   [][2]int64 `json:"pairs"`
	Records [][2]int64 `json:"records"`
}

type job struct {
	LogKey    string   `json:"logKey"`
	Witnesses []string `json:"witnesses"`
	Checks    []check  `json:"checks"`
}

type result struct {
	OK          bool                `json:"ok"`
	Error       string              `json:"error,omitempty"`
	Origin      string              `json:"origin,omitempty"`
	Size        int64               `json:"size,omitempty"`
	Root        string              `json:"root,omitempty"`
	Cosigners   []string            `json:"cosigners,omitempty"`
	Roots       map[string]string   `json:"roots,omitempty"`
	Consistency map[string][]string `json:"consistency,omitempty"`
	Inclusion   map[string][]string `json:"inclusion,omitempty"`
}

type checkpoint struct {
	origin string
	size   int64
	root   tlog.Hash
}

// cosigner is a note.Verifier of C2SP cosignature/v1 signatures.
type cosigner struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

func (c *cosigner) Name() string    { return c.name }
func (c *cosigner) KeyHash() uint32 { return c.hash }
func (c *cosigner) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig[:8])
	signed := append([]byte(fmt.Sprintf("cosignature/v1\ntime %d\n", t)), msg...)
	return ed25519.Verify(c.key, signed, sig[8:])
}

// newCosigner reads a cosignature/v1 verifier key: <name>+<hex key ID>+base64(0x04 || 32-byte key).
func newCosigner(vkey string) (*cosigner, error) {
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 {
		return nil, errors.New("malformed witness key")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(raw) != 1+ed25519.PublicKeySize || raw[0] != 0x04 {
		return nil, errors.New("a witness key is base64 of 0x04 and 32 Ed25519 key bytes")
	}
	id, err := strconv.ParseUint(parts[1], 16, 32)
	if err != nil || len(parts[1]) != 8 {
		return nil, errors.New("malformed witness key ID")
	}
	sum := sha256.Sum256(append([]byte(parts[0]+"\n"), raw...))
	if binary.BigEndian.Uint32(sum[:4]) != uint32(id) {
		return nil, errors.New("the witness key's ID is not its key's")
	}
	return &cosigner{name: parts[0], hash: uint32(id), key: ed25519.PublicKey(raw[1:])}, nil
}

// parseCheckpoint reads a C2SP tlog-checkpoint note text: origin, decimal size, base64 root, extensions.
func parseCheckpoint(text string) (checkpoint, error) {
	lines := strings.Split(text, "\n")
	if len(lines) < 4 || lines[len(lines)-1] != "" || lines[0] == "" {
		return checkpoint{}, errors.New("malformed checkpoint")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return checkpoint{}, errors.New("malformed checkpoint size")
	}
	root, err := tlog.ParseHash(lines[2])
	if err != nil {
		return checkpoint{}, errors.New("malformed checkpoint root")
	}
	return checkpoint{origin: lines[0], size: size, root: root}, nil
}

type checker struct {
	log       note.Verifier
	witnesses []*cosigner
	verifiers note.Verifiers
}

// open verifies a note: the log's signature must be there, every known signature must verify.
func (c *checker) open(text string) (*note.Note, checkpoint, error) {
	n, err := note.Open([]byte(text), c.verifiers)
	if err != nil {
		return nil, checkpoint{}, err
	}
	signed := false
	for _, s := range n.Sigs {
		if s.Name == c.log.Name() && s.Hash == c.log.KeyHash() {
			signed = true
		}
	}
	if !signed {
		return nil, checkpoint{}, errors.New("the note is not signed by the log's key")
	}
	cp, err := parseCheckpoint(n.Text)
	if err != nil {
		return nil, checkpoint{}, err
	}
	if cp.origin != c.log.Name() {
		return nil, checkpoint{}, fmt.Errorf("the checkpoint's origin %q is not the log's key name", cp.origin)
	}
	return n, cp, nil
}

func hashes(b64 []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(b64))
	for i, s := range b64 {
		h, err := tlog.ParseHash(s)
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

func strs(hs []tlog.Hash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.String()
	}
	return out
}

func (c *checker) run(k check) (result, error) {
	switch k.Type {
	case "note":
		_, cp, err := c.open(k.Note)
		if err != nil {
			return result{}, err
		}
		return result{Origin: cp.origin, Size: cp.size, Root: cp.root.String()}, nil
	case "inclusion":
		_, cp, err := c.open(k.Note)
		if err != nil {
			return result{}, err
		}
		leaf, err := base64.StdEncoding.DecodeString(k.Leaf)
		if err != nil {
			return result{}, err
		}
		p, err := hashes(k.Proof)
		if err != nil {
			return result{}, err
		}
		if err := tlog.CheckRecord(p, cp.size, cp.root, k.Index, tlog.RecordHash(leaf)); err != nil {
			return result{}, err
		}
		return result{Size: cp.size, Root: cp.root.String()}, nil
	case "consistency":
		_, old, err := c.open(k.Old)
		if err != nil {
			return result{}, err
		}
		_, cp, err := c.open(k.Note)
		if err != nil {
			return result{}, err
		}
		p, err := hashes(k.Proof)
		if err != nil {
			return result{}, err
		}
		if err := tlog.CheckTree(p, cp.size, cp.root, old.size, old.root); err != nil {
			return result{}, err
		}
		return result{Size: cp.size, Root: cp.root.String()}, nil
	case "cosigned":
		n, cp, err := c.open(k.Note)
		if err != nil {
			return result{}, err
		}
		r := result{Size: cp.size, Root: cp.root.String(), Cosigners: []string{}}
		for _, s := range n.Sigs {
			for _, w := range c.witnesses {
				if s.Name == w.name && s.Hash == w.hash {
					r.Cosigners = append(r.Cosigners, w.name)
				}
			}
		}
		return r, nil
	case "prove":
		return prove(k)
	}
	return result{}, fmt.Errorf("unknown check %q", k.Type)
}

// prove builds the tree of the leaves with x/mod (StoredHashes, kept in a slice) and answers its roots and proofs.
func prove(k check) (result, error) {
	var stored []tlog.Hash
	reader := tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(indexes))
		for i, x := range indexes {
			if x < 0 || x >= int64(len(stored)) {
				return nil, fmt.Errorf("no stored hash %d", x)
			}
			out[i] = stored[x]
		}
		return out, nil
	})
	for i, b64 := range k.Leaves {
		leaf, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return result{}, err
		}
		hs, err := tlog.StoredHashes(int64(i), leaf, reader)
		if err != nil {
			return result{}, err
		}
		stored = append(stored, hs...)
	}
	r := result{Roots: map[string]string{}, Consistency: map[string][]string{}, Inclusion: map[string][]string{}}
	for _, n := range k.Sizes {
		h, err := tlog.TreeHash(n, reader)
		if err != nil {
			return result{}, err
		}
		r.Roots[strconv.FormatInt(n, 10)] = h.String()
	}
	for _, p := range k.Pairs {
		proof, err := tlog.ProveTree(p[1], p[0], reader)
		if err != nil {
			return result{}, err
		}
		r.Consistency[fmt.Sprintf("%d-%d", p[0], p[1])] = strs(proof)
	}
	for _, p := range k.Records {
		proof, err := tlog.ProveRecord(p[1], p[0], reader)
		if err != nil {
			return result{}, err
		}
		r.Inclusion[fmt.Sprintf("%d-%d", p[0], p[1])] = strs(proof)
	}
	return r, nil
}

func main() {
	var j job
	if err := json.NewDecoder(os.Stdin).Decode(&j); err != nil {
		fmt.Fprintln(os.Stderr, "tlogcheck: reading the job:", err)
		os.Exit(2)
	}
	logVerifier, err := note.NewVerifier(j.LogKey)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tlogcheck: the log's key:", err)
		os.Exit(2)
	}
	c := &checker{log: logVerifier}
	list := []note.Verifier{logVerifier}
	for _, w := range j.Witnesses {
		cs, err := newCosigner(w)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tlogcheck:", err)
			os.Exit(2)
		}
		c.witnesses = append(c.witnesses, cs)
		list = append(list, cs)
	}
	c.verifiers = note.VerifierList(list...)
	results := make([]result, len(j.Checks))
	for i, k := range j.Checks {
		r, err := c.run(k)
		if err != nil {
			results[i] = result{Error: err.Error()}
			continue
		}
		r.OK = true
		results[i] = r
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		fmt.Fprintln(os.Stderr, "tlogcheck:", err)
		os.Exit(2)
	}
}
