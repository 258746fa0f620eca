// A TCP port free on loopback right now (for a server that must be started on a port known in advance).
export { freePort } from "../../runtime/tcp-ports.ts";
