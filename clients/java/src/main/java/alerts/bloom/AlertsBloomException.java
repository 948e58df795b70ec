package alerts.bloom;

/** Input the server refuses too: the message names the problem and the fix. */
public final class AlertsBloomException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public AlertsBloomException(String message) {
        super(message);
    }
}
