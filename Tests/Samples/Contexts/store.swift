// An open store of the mail feed's entities (`entities.swift`), for the documentation's samples
// marked `context store`.
import Feedstore

let store = try! Store(path: "mail.store", entities: [Message.self, Contact.self])
