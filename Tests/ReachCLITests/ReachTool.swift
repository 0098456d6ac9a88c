import Foundation
import NetnsTestSupport
import Synchronization

/// Runs `reach` to completion.
func reach(_ arguments: String...) throws -> CommandResult {
    try run([reachBinary] + arguments, check: false)
}

