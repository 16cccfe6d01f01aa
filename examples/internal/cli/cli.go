// Package cli is what the example programs share: their flags, the device (or an
// in-memory loopback fabric, for a machine without RDMA) and the servers they dial.
package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/rdma"
	_ "github.com/rdmabench/rdmabench/rdma/rdmaserver" // --loopback serves on an in-memory fabric
)

// Flags are the programs' common flags; Servers are the arguments.
type Flags struct {
	Device    string
	Port      int
	GIDIndex  int
	TokenFile string
	Size      int
	Timeout   time.Duration
	Loopback  int
	Servers   []string
}

// Parse parses args (without the program name). usage describes the arguments; more,
// when not nil, adds the program's own flags.
func Parse(name, usage string, args []string, stderr io.Writer, more func(*flag.FlagSet)) (*Flags, error) {
	f := &Flags{}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	if more != nil {
		more(fs)
	}
	fs.SetOutput(stderr)
	fs.StringVar(&f.Device, "device", "", "RDMA device (default: the first with an ACTIVE port)")
	fs.IntVar(&f.Port, "port", 1, "device port")
	fs.IntVar(&f.GIDIndex, "gid-index", -1, "GID index (-1: pick like rdmabench)")
	fs.StringVar(&f.TokenFile, "token-file", "", "file with the servers' shared secret (default $RDMABENCH_TOKEN)")
	fs.IntVar(&f.Size, "size", 1<<20, "bytes per peer")
	fs.DurationVar(&f.Timeout, "timeout", 30*time.Second, "bound on each step of the control protocol")
	fs.IntVar(&f.Loopback, "loopback", 0, "ignore the arguments: run against this many in-memory servers (no RDMA device needed)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s [flags] %s\n\nServers are host[:port] of 'rdmabench server' (port 18600 by default).\n\n", name, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	f.Servers = fs.Args()
	if f.Loopback == 0 && len(f.Servers) == 0 {
		fs.Usage()
		return nil, errors.New("no server given")
	}
	if f.Size < 1 {
		return nil, fmt.Errorf("--size %d: want at least 1 byte", f.Size)
	}
	return f, nil
}

// Open opens the device and returns it with the servers to dial and the token. With
// --loopback it starts in-memory servers and opens a device on their fabric. close
// releases everything.
func (f *Flags) Open() (dev *rdma.Device, servers []string, token string, close func(), err error) {
	token = strings.TrimSpace(os.Getenv("RDMABENCH_TOKEN"))
	if f.TokenFile != "" {
		b, err := os.ReadFile(f.TokenFile)
		if err != nil {
			return nil, nil, "", nil, fmt.Errorf("--token-file: %w", err)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return nil, nil, "", nil, fmt.Errorf("--token-file %s is empty", f.TokenFile)
		}
	}
	if f.Loopback > 0 {
		lo := rdma.NewLoopback()
		for range f.Loopback {
			addr, err := lo.Listen(token)
			if err != nil {
				lo.Close()
				return nil, nil, "", nil, err
			}
			servers = append(servers, addr)
		}
		dev := lo.Device()
		return dev, servers, token, func() { dev.Close(); lo.Close() }, nil
	}
	dev, err = rdma.Open(f.Device, f.Port, f.GIDIndex)
	if err != nil {
		return nil, nil, "", nil, err
	}
	return dev, f.Servers, token, func() { dev.Close() }, nil
}

// DialAll holds a region of f.Size bytes on each server.
func (f *Flags) DialAll(ctx context.Context, dev *rdma.Device, servers []string, token string) ([]*rdma.Conn, error) {
	var conns []*rdma.Conn
	for _, s := range servers {
		c, err := dev.Dial(ctx, s, rdma.Config{Size: f.Size, Token: token, Timeout: f.Timeout})
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			return nil, err
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// Fill fills b with bytes that depend on seed.
func Fill(b []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	for i := 0; i < len(b); i += 8 {
		v := r.Uint64()
		for k := 0; k < 8 && i+k < len(b); k++ {
			b[i+k] = byte(v >> (8 * k))
		}
	}
}

// Compare says where got differs from want, for peer.
func Compare(peer string, got, want []byte) error {
	if bytes.Equal(got, want) {
		return nil
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	return fmt.Errorf("bytes differ: %s: read back differs from what was written from byte %d of %d", peer, i, len(want))
}

// CheckDigest compares the digest a server reported on Close with the SHA-256 of want.
func CheckDigest(c *rdma.Conn, want []byte) error {
	sum := sha256.Sum256(want)
	if got := c.Digest(); got != hex.EncodeToString(sum[:]) {
		return fmt.Errorf("bytes differ: %s: the server's digest of its region is %q, the SHA-256 of what was written is %x", c.Addr(), got, sum)
	}
	return nil
}

// Main runs a program's run function and exits: 0, or 1 with the error on stderr.
func Main(name string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		}
		os.Exit(1)
	}
}
