package invalid.example.quorumlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Settings and options are immutable and check what Java can check, without the native
 * library (`make deps-jvm` runs this class alone to fetch the test provider).
 */
class OptionsTest {
    @Test
    void withersCopy() {
        LockOptions a = LockOptions.defaults();
        LockOptions b = a.withLeaseTime(Duration.ofSeconds(3)).withFencing(true);
        assertNotSame(a, b);
        assertNull(a.getLeaseTime());
        assertEquals(Duration.ofSeconds(3), b.getLeaseTime());
        assertEquals(Boolean.TRUE, b.getFencing());
        Settings s = Settings.defaults().withQuarantine(Quarantine.OFF).withLockDefaults(b);
        assertNull(Settings.defaults().getQuarantine());
        assertEquals(Quarantine.OFF, s.getQuarantine());
        assertEquals(b, s.getLockDefaults());
    }

    @Test
    void negativeAndNullValuesAreIllegalArguments() {
        assertThrows(IllegalArgumentException.class, () -> LockOptions.defaults().withRetryDelay(Duration.ofMillis(-1)));
        assertThrows(IllegalArgumentException.class, () -> LockOptions.defaults().withMaxHold(null));
        assertThrows(IllegalArgumentException.class, () -> Settings.defaults().withQuarantine(null));
        assertThrows(IllegalArgumentException.class, () -> Settings.defaults().withWarningListener(null));
        assertThrows(IllegalArgumentException.class, () -> Settings.defaults().withKeyPrefix(null));
    }
}
