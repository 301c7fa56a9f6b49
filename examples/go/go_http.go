// A Go net/http server, as its users write one: the standard library only. Go's runtime makes
// its own system calls (its netpoller on edge-triggered epoll, its futexes, its clock), which
// the seam's trap serves (docs/targets.md).
//
//	go_http --port 8080            serve; on SIGTERM, http.Server.Shutdown: stop accepting, let
//	                               requests in flight finish, close idle connections, exit 0
//	go_http --port 8080 --abrupt   on SIGTERM, exit at once (os.Exit), whatever is in flight
//	go_http --port 8080 --hold     never answer /hold (a handler that forgets to write)
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	port := flag.Int("port", 8080, "the port to listen on, on 127.0.0.1")
	abrupt := flag.Bool("abrupt", false, "exit at once on SIGTERM")
	hold := flag.Bool("hold", false, "leave /hold unanswered")
	flag.Parse()

	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s\n", r.URL.Path)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		fmt.Fprintln(w, "slow")
	})
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		if *hold {
			select {} // the connection stays open and its request is never answered
		}
		fmt.Fprintln(w, "held")
	})
	server := &http.Server{Addr: fmt.Sprintf("127.0.0.1:%d", *port), Handler: mux}

	done := make(chan struct{})
	go func() {
		terms := make(chan os.Signal, 1)
		signal.Notify(terms, syscall.SIGTERM)
		<-terms
		if *abrupt {
			os.Exit(0)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := server.Shutdown(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "shutdown:", err)
		}
		close(done)
	}()

	if err := server.ListenAndServe(); err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
	<-done
}
