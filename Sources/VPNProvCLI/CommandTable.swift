/// Every command of `vpnprov`, in the order `--help` lists them: the one table the dispatcher, the help, the manual
/// page and the completions read (`CommandLineTool.commands`). A command's configuration is made with its case
/// (`CommandConfiguration(name:)`), and each case names its type in `command`, an exhaustive switch: a command type
/// cannot name itself without a case, nor a case be left without its type (`TypedCommandTests` checks that each
/// type names its own case).
enum CommandName: String, CaseIterable, Sendable {
    case validate, generate, check, revoke
    case `init`
    case status
    case rotateCA = "rotate-ca"
    case rotatePSK = "rotate-psk"
    case rotateRadiusSecret = "rotate-radius-secret"
    case rotatePassword = "rotate-password"
    case rotatePPK = "rotate-ppk"
    case unrevoke
    case rolledOut = "rolled-out"
    case handOff = "handoff"
    case handOffRevoke = "handoff-revoke"
    case handOffList = "handoff-list"
    case accounts

    /// The command's type.
    var command: any Command.Type {
        switch self {
        case .validate: ValidateCommand.self
        case .generate: GenerateCommand.self
        case .check: CheckCommand.self
        case .revoke: RevokeCommand.self
        case .`init`: InitCommand.self
        case .status: StatusCommand.self
        case .rotateCA: RotateCACommand.self
        case .rotatePSK: RotatePSKCommand.self
        case .rotateRadiusSecret: RotateRadiusSecretCommand.self
        case .rotatePassword: RotatePasswordCommand.self
        case .rotatePPK: RotatePPKCommand.self
        case .unrevoke: UnrevokeCommand.self
        case .rolledOut: RolledOutCommand.self
        case .handOff: HandOffCommand.self
        case .handOffRevoke: HandOffRevokeCommand.self
        case .handOffList: HandOffListCommand.self
        case .accounts: AccountsCommand.self
        }
    }
}

/// The actions of `vpnprov accounts`, in the order its help lists them, each naming its type as `CommandName` does.
enum AccountsActionName: String, CaseIterable, Sendable {
    case migrate, add
    case `import`
    case setPassword = "set-password"
    case setTier = "set-tier"
    case setDevices = "set-devices"
    case setQuota = "set-quota"
    case disable, enable, delete, list, sessions, usage, disconnect, catalogue, drain, undrain

    /// The action's type.
    var action: any AccountsAction.Type {
        switch self {
        case .migrate: AccountsMigrate.self
        case .add: AccountsAdd.self
        case .`import`: AccountsImport.self
        case .setPassword: AccountsSetPassword.self
        case .setTier: AccountsSetTier.self
        case .setDevices: AccountsSetDevices.self
        case .setQuota: AccountsSetQuota.self
        case .disable: AccountsDisable.self
        case .enable: AccountsEnable.self
        case .delete: AccountsDelete.self
        case .list: AccountsList.self
        case .sessions: AccountsSessions.self
        case .usage: AccountsUsage.self
        case .disconnect: AccountsDisconnect.self
        case .catalogue: AccountsCatalogue.self
        case .drain: AccountsDrain.self
        case .undrain: AccountsUndrain.self
        }
    }
}
