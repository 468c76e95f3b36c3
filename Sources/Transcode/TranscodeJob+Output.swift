import Media
import NIOCore

extension TranscodeJob {
    /// Where one rung's frames go: its hub, publisher identity and interleaver. Outlives
    /// encoder reconfigurations, so viewers of a rendition stay attached when the source
    /// changes resolution.
    final class Output {
        let name: String
        let hub: StreamHub
        /// Runs everything below except `decoderConfiguration`.
        let worker: SerialWorker
        private var interleaver: Interleaver
        private var dirty = false
        /// The avcC last published, so an unchanged one is not sent again (pipeline thread).
        var decoderConfiguration: ByteBuffer?

        init(name: String, hub: StreamHub, interleaver: Interleaver, worker: SerialWorker) {
            self.name = name
            self.hub = hub
            self.interleaver = interleaver
            self.worker = worker
        }

        // Submitted from the pipeline thread, run on the worker.

        func submit(_ frames: [MediaFrame]) {
            guard !frames.isEmpty else { return }
            worker.submit { self.publish(frames) }
        }

        func submitAudio(_ frame: MediaFrame) {
            worker.submit { self.publish(self.interleaver.audio(frame)) }
        }

        func submitVideo(_ frame: MediaFrame) {
            worker.submit { self.publish(self.interleaver.video(frame)) }
        }

        /// Wakes the hub's subscribers for what was published since the last wake-up
        /// (copied audio that no picture has released yet, at the end of a batch).
        func submitFlush() {
            worker.submit { self.wakeSubscribers() }
        }

        /// Publishes held audio, flushes and ends the hub; the worker then stops.
        func end() {
            worker.submit {
                self.publish(self.interleaver.drain())
                self.hub.flush()
                self.hub.end()
            }
            worker.stop()
        }

        // On the worker.

        /// Publishes a coded picture, with the audio it releases, and wakes the hub's
        /// subscribers at once. Not at the end of the pipeline's batch: a transcoder that
        /// is catching up takes its whole inbox as one batch (seconds of input), and its
        /// output must not wait in the subscribers' queues until the batch is done.
        func publishVideo(_ frame: MediaFrame) {
            publish(interleaver.video(frame))
            wakeSubscribers()
        }

        private func wakeSubscribers() {
            guard dirty else { return }
            dirty = false
            hub.flush()
        }

        private func publish(_ frames: [MediaFrame]) {
            for frame in frames {
                hub.publish(frame, publisher: TranscodeJob.publisherID)
                dirty = true
            }
        }
    }
}
