'use strict'
// node-redlock's error classes and per-attempt statistics, built from quorumlock's per-node
// reports. Messages are node-redlock's own, so code that matches them keeps working.

/** A node refused the operation because of another lock's entries (node-redlock's class). */
class ResourceLockedError extends Error {
  constructor(message) {
    super(message)
    this.name = 'ResourceLockedError'
  }
}

/** An operation failed to reach a quorum (node-redlock's class). */
class ExecutionError extends Error {
  constructor(message, attempts) {
    super(message)
    this.name = 'ExecutionError'
    this.attempts = attempts
  }
}

const QUORUM_MESSAGE = 'The operation was unable to achieve a quorum during its retry window.'
const EXPIRED_MESSAGE = 'Cannot extend an already-expired lock.'

// node-redlock's scripts return how many of the keys they changed; a node votes for when
// that is all of them. quorumlock's node kinds say the same in words.
const APPLIED = { HeldByOther: () => 0, NotHeld: () => 0, Partial: () => 'some' }

// What ioredis rejects a command with when its connection is down (node-redlock passes it on).
const CONNECTION_CLOSED = 'Connection is closed.'

/** The Error node-redlock would record for one node's answer against the operation. */
function nodeError(node, keyCount) {
  let error
  if (Object.hasOwn(APPLIED, node.kind)) {
    const applied = APPLIED[node.kind]()
    error = new ResourceLockedError(`The operation was applied to: ${applied} of the ${keyCount} requested resources.`)
  } else if (node.category === 'Connection') {
    error = new Error(CONNECTION_CLOSED)
  } else {
    error = new Error(`${node.kind} on ${node.address}${node.detail ? `: ${node.detail}` : ''}`)
  }
  // quorumlock's own words for the node: kind, category, address, detail.
  error.node = node
  return error
}

/**
 * node-redlock's ExecutionStats of one attempt: `votesFor` and `votesAgainst` keyed by the
 * caller's client objects. Nodes whose reply was not awaited (decided at the quorum) are in
 * neither.
 */
function statsOf(clients, nodes, keyCount) {
  const votesFor = new Set()
  const votesAgainst = new Map()
  for (const n of nodes) {
    const client = clients[n.index]
    if (n.kind === 'Ok' || n.kind === 'Released') votesFor.add(client)
    else if (n.kind !== 'Pending') votesAgainst.set(client, nodeError(n, keyCount))
  }
  return Object.freeze({
    membershipSize: clients.length,
    quorumSize: Math.floor(clients.length / 2) + 1,
    votesFor,
    votesAgainst,
  })
}

module.exports = { ResourceLockedError, ExecutionError, statsOf, QUORUM_MESSAGE, EXPIRED_MESSAGE }
