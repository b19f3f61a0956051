import VPNProvCrypto
import VPNProvSupport
import VPNProvYAML

// Rule codes of a node's `deploy:` (how the generated Ansible rollout reaches it).

extension RuleCode {
    /// `deploy.host` (or, without it, the address it defaults to) is not an IP address or host name
    /// SSH can connect to.
    static let invalidDeployHost = RuleCode("invalid-deploy-host")
    /// `deploy.user` is not a login name a Unix system accepts.
    static let invalidDeployUser = RuleCode("invalid-deploy-user")
}
