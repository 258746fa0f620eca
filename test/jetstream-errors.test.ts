// How JetStream's refusals are classified: by the server's error code on a JetStreamApiError, never by message text.
import { describe, expect, it } from "vitest";
import { JetStreamApiError } from "@nats-io/jetstream";
import { JetStreamStatusError, jserrors } from "@nats-io/jetstream/internal";
import { isConsumerExisting, isJetStreamUnavailable, isNoMessage, isStreamOrConsumerMissing, isWrongLastSequence } from "../eventlog/jetstream-errors.ts";

const apiError = (err_code: number, description: string) => new JetStreamApiError({ code: 400, err_code, description });

describe("JetStream error classification", () => {
  it("tells a lost optimistic append (either wrong-last-sequence code) from other refusals", () => {
    expect(isWrongLastSequence(apiError(10071, "wrong last sequence: 4"))).toBe(true);
    expect(isWrongLastSequence(apiError(10164, "wrong last sequence"))).toBe(true);
    expect(isWrongLastSequence(apiError(10037, "no message found"))).toBe(false);
  });

  it("goes by the code, not the wording", () => {
    expect(isWrongLastSequence(new Error("wrong last sequence: 4"))).toBe(false);
    expect(isWrongLastSequence(apiError(10071, "reworded by a newer server"))).toBe(true);
    expect(isNoMessage(new Error("no message found"))).toBe(false);
    expect(isStreamOrConsumerMissing("stream not found")).toBe(false);
  });

  it("treats a missing message and a missing stream as no message", () => {
    expect(isNoMessage(apiError(10037, "no message found"))).toBe(true);
    expect(isNoMessage(new jserrors.StreamNotFoundError({ code: 404, err_code: 10059, description: "stream not found" }))).toBe(true);
    expect(isNoMessage(apiError(10071, "wrong last sequence: 4"))).toBe(false);
  });

  it("recognises a missing stream or consumer", () => {
    expect(isStreamOrConsumerMissing(new jserrors.StreamNotFoundError({ code: 404, err_code: 10059, description: "stream not found" }))).toBe(true);
    expect(isStreamOrConsumerMissing(new jserrors.ConsumerNotFoundError({ code: 404, err_code: 10014, description: "consumer not found" }))).toBe(true);
    expect(isStreamOrConsumerMissing(apiError(10037, "no message found"))).toBe(false);
  });

  it("recognises a durable consumer that exists already", () => {
    expect(isConsumerExisting(apiError(10148, "consumer already exists"))).toBe(true);
    expect(isConsumerExisting(apiError(10013, "consumer name already in use"))).toBe(true);
    expect(isConsumerExisting(apiError(10059, "stream not found"))).toBe(false);
  });

  it("recognises JetStream that cannot serve for now by class and code, not by the wording", () => {
    expect(isJetStreamUnavailable(apiError(10008, "JetStream system temporarily unavailable"))).toBe(true);
    expect(isJetStreamUnavailable(new JetStreamStatusError("no responders", 503))).toBe(true);
    expect(isJetStreamUnavailable(new jserrors.JetStreamNotEnabled("jetstream is not enabled", { cause: new Error("no responders") }))).toBe(true);
    expect(isJetStreamUnavailable(new Error("JetStream system temporarily unavailable"))).toBe(false);
    expect(isJetStreamUnavailable(new Error("jetstream is not enabled"))).toBe(false);
    expect(isJetStreamUnavailable(new JetStreamStatusError("request timeout", 408))).toBe(false);
    expect(isJetStreamUnavailable(apiError(10071, "wrong last sequence: 4"))).toBe(false);
  });
});
