package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/rdmabench/rdmabench/bench"
	"github.com/rdmabench/rdmabench/result"
)

// fanRun runs a bandwidth test against several servers at once (SERVER a,b:port,c):
// one QP per server, WRITE broadcasts, READ gathers. Ctrl-C keeps what was measured.
func fanRun(o *testOptions, addrs []string) error {
	if err := o.prepare(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	f, err := bench.DialFan(ctx, addrs, o.Local, o.Token, o.Timeout)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := f.Run(ctx, o.Op, o.Config)
	return errors.Join(err, o.Out.write([]result.Result{r}))
}
