// Command rmq runs a RocketMQ 4.x-compatible name server and broker.
//
//	rmq standalone [-c broker.conf] [--store-dir DIR] [--namesrv-port 9876] [--listen-port 10911] [--bind-address IP]
//	rmq namesrv    [-c namesrv.conf] [--listen-port 9876] [--bind-address IP]
//	rmq broker     [-n 127.0.0.1:9876] [-c broker.conf] [--store-dir DIR] [--listen-port 10911] [--bind-address IP]
//	rmq version
//
// Every server command also takes the stock -p (print every config key and
// exit) and -m (print the important keys and exit), and --log-level.
//
// # Standalone process
//
//	+---------------------------- rmq standalone -----------------------------+
//	|  name server   <bind>:<namesrv-port>                                    |
//	|       ^  REGISTER_BROKER every 30 s, UNREGISTER_BROKER at shutdown      |
//	|       |  (namesrvAddr = <bind or 127.0.0.1>:<namesrv-port>)             |
//	|  broker        <bind>:<listen-port>  and  <bind>:<listen-port - 2>      |
//	|       |        advertised as <brokerIP1>:<listen-port>                  |
//	|       v                                                                 |
//	|  store dir     <store-dir>/ commitlog/ consumequeue/ config/ checkpoint |
//	|                            abort (present while running) namesrv/       |
//	+-------------------------------------------------------------------------+
//
// # Configuration
//
// Each setting comes from, in increasing priority: the stock default, the
// NAMESRV_ADDR environment variable (namesrvAddr only), the -c file (Java
// key=value format, see package conf), then the command-line flags. In
// standalone mode the broker always registers with its own name server, and
// the name server listens on the broker's bindAddress (default 0.0.0.0) with
// the broker's connection limits.
//
// # Output and signals
//
// stdout carries only the stock readiness lines, which scripts grep for
// "boot success":
//
//	The Name Server boot success. serializeType=JSON
//	The broker[<brokerName>, <brokerIP1>:<listenPort>] boot success. serializeType=JSON and name server is <namesrvAddr>
//
// Logs go to stderr. The first SIGINT or SIGTERM shuts down cleanly (broker
// first, so it can unregister from a live name server, then the name server)
// and exits 0, or 1 if shutdown failed; a second signal ends the process at
// once. A start-up or config error exits 1 with the reason on stderr.
package main
