-- A Brazilian mobile stored without its ninth digit (as WhatsApp named it in a provider's callback) gets
-- it, as normalisePhone now writes every such number (canonicalPhone). Where the workspace already has the
-- number with its nine (the API wrote to it, the customer answered by the other form), both contacts stay
-- as they are: merging their conversations is an operator's call.
update contacts c
   set phone = '+55' || substr(c.phone, 4, 2) || '9' || substr(c.phone, 6), updated_at = now()
 where c.phone ~ '^\+55[1-9]{2}[6-9][0-9]{7}$'
   and not exists (
     select 1 from contacts twin
      where twin.workspace_id = c.workspace_id
        and twin.phone = '+55' || substr(c.phone, 4, 2) || '9' || substr(c.phone, 6));
